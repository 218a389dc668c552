"""DDP across two SLURM nodes: `node1` and `node2` of .ci/slurm_cluster.sh, each a network
namespace with its own address and host name, so the rendezvous crosses a network.

Skipped without the cluster; with RESEARCH_REQUIRE_SLURM=1 (as `.ci/run` sets) that is a failure.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import slurm
from tests.helpers.cli import metrics, run_cli
from tests.helpers.slurm import QUIET, SLURM, TRAIN

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.timeout(1800)]

CLUSTER_SCRIPT = Path(__file__).parents[2] / ".ci" / "slurm_cluster.sh"
NODES = {"node1": "10.203.0.11", "node2": "10.203.0.12"}
# One rank a node, on CPU (gloo): what `trainer=ddp trainer.num_nodes=2` is on GPU nodes.
TWO_NODES = [
    *SLURM,
    "hydra.launcher.partition=two",
    "hydra.launcher.nodes=2",
    "trainer=ddp",
    "trainer.num_nodes=2",
    "trainer.devices=1",
    "trainer.accelerator=cpu",
    "trainer.sync_batchnorm=false",  # SyncBatchNorm needs GPUs
    # One thread a rank, as Lightning gives each of ddp_sim's two processes on two cores: a
    # float sum over other threads rounds otherwise.
    "hydra.launcher.setup=['export OMP_NUM_THREADS=1']",
]


@pytest.fixture(scope="module", autouse=True)
def two_nodes() -> None:
    slurm.require_cluster()
    shown = subprocess.run(
        ["sinfo", "-h", "-N", "-p", "two", "-o", "%N %t"], capture_output=True, text=True
    ).stdout
    states = dict(line.split() for line in shown.splitlines() if line.strip())
    if sorted(states) != sorted(NODES):
        slurm.require(f"no partition `two` with {sorted(NODES)} (sinfo: {states})")


@pytest.fixture(autouse=True)
def cancel_leftovers(workdir: Path) -> Iterator[None]:
    yield
    slurm.cancel_jobs(workdir)


def _ddp_sim(workdir: Path, *args: str) -> dict:
    """The metrics of the same training as two local processes."""
    local = run_cli(
        "research-train",
        "trainer=ddp_sim",
        *args,
        cwd=workdir,
        timeout=600,
        env={"OMP_NUM_THREADS": "1"},
    )
    assert local.returncode == 0, local.stderr[-3000:]
    (run,) = (workdir / "logs" / "train" / "runs").glob("*")
    return metrics(run)


def test_two_nodes_train_like_ddp_sim_with_one_wandb_run(workdir: Path):
    args = [*QUIET, "debug=limit"]
    on_nodes = run_cli("research-train", "-m", *TWO_NODES, *args, cwd=workdir, timeout=600)
    assert on_nodes.returncode == 0, on_nodes.stdout[-3000:] + on_nodes.stderr[-3000:]
    sweep = slurm.sweep_dir(workdir)
    job = slurm.job_dir(sweep, 0)
    m = metrics(job)
    # One W&B run, rank zero's, in the run dir; no other rank started one anywhere.
    (offline,) = workdir.rglob("offline-run-*")
    assert offline.parent == job / "wandb"
    assert offline.name.endswith(m["wandb"]["run_id"])

    placement = m["ddp"]
    assert (placement["world_size"], placement["num_nodes"]) == (2, 2)
    # The rendezvous is node1's address, and node2's rank reached it from its own address.
    assert placement["rendezvous"]["host"] == "node1"
    assert placement["rendezvous"]["address"] == NODES["node1"]
    seen = [(r["rank"], r["node_rank"], r["host"], r["address"]) for r in placement["ranks"]]
    assert seen == [(0, 0, "node1", NODES["node1"]), (1, 1, "node2", NODES["node2"])]
    # Each rank says where it ran, in its own task's log.
    logs = "".join(p.read_text() for p in (sweep / ".submitit").rglob("*_log.*"))
    assert "rank 1 of 2: node rank 1 on node2 (10.203.0.12); rendezvous node1:" in logs
    assert "rank 0 of 2: node rank 0 on node1 (10.203.0.11); rendezvous node1:" in logs

    local = _ddp_sim(workdir, *args)
    assert m["final"] == local["final"] and m["best"] == local["best"]


def test_a_preempted_two_node_job_resumes_to_the_metrics_of_an_uninterrupted_run(
    workdir: Path,
):
    proc = slurm.start(workdir, "-m", *TWO_NODES, *TRAIN)
    try:
        job, job_id = slurm.when_training(workdir, 0)
        # Preemption requeues the whole job: both nodes' processes are stopped.
        subprocess.run(["scontrol", "requeue", job_id], check=True, timeout=30)
        out, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-3000:]
    m = metrics(job)
    assert m["status"] == "completed"
    assert m["resumed_from"] == str(job / "checkpoints" / "last.ckpt")
    assert len(slurm.wandb_runs(job)) == 2  # one offline folder per attempt, rank zero's
    local = _ddp_sim(workdir, *TRAIN)
    assert m["final"] == local["final"] and m["best"] == local["best"]


def test_a_node_that_dies_mid_job_fails_the_run_with_a_reason(workdir: Path):
    proc = slurm.start(workdir, "-m", *TWO_NODES, *TRAIN, "trainer.max_epochs=500")
    try:
        job, _ = slurm.when_training(workdir, 0)
        # node2 dies: its slurmd, its job step and its rank, all at once.
        pids = subprocess.run(
            ["ip", "netns", "pids", "slurm-node2"], capture_output=True, text=True, check=True
        ).stdout.split()
        assert pids
        subprocess.run(["kill", "-9", *pids], check=True)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["bash", str(CLUSTER_SCRIPT)], check=True, timeout=120)  # node2 back
    assert proc.returncode == 1, out[-3000:]
    m = metrics(job)
    assert m["status"] == "failed"
    # The reason names the lost peer's address, and the record maps it to node2.
    assert NODES["node2"] in m["error"], m["error"]
    assert m["ddp"]["ranks"][1]["address"] == NODES["node2"]
    assert m["ddp"]["ranks"][1]["host"] == "node2"
    summary = json.loads((slurm.sweep_dir(workdir) / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["failed"]) == (1, 1)
