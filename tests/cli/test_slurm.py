"""Sweeps through `launcher=submitit_slurm` on a real one-node SLURM cluster (.ci/slurm_cluster.sh).

Skipped where `sbatch` cannot run jobs (no cluster, no root to start one); with
RESEARCH_REQUIRE_SLURM=1 (as `.ci/run` sets) that is a failure instead.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from research.tracking.wandb_reader import read_offline_run
from tests.helpers import slurm
from tests.helpers.cli import BIN, cli_env, metrics, run_cli
from tests.helpers.slurm import QUIET, SLURM, TRAIN

# Jobs queue behind each other on a 2-core node; a loaded machine needs more than the default.
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module", autouse=True)
def slurm_cluster() -> None:
    slurm.require_cluster()


@pytest.fixture(autouse=True)
def cancel_leftovers(workdir: Path) -> Iterator[None]:
    """A failed test must not leave its jobs queued for the next one."""
    yield
    slurm.cancel_jobs(workdir)


@pytest.mark.slow
def test_array_preemption_and_time_limit_resume_like_an_uninterrupted_run(workdir: Path):
    """Three array jobs, same seed: 0 requeued by `scontrol requeue` (preemption), 1 sent the
    signal SLURM sends before its time limit (submitit's `--signal=USR2@...`), 2 untouched."""
    proc = slurm.start(workdir, "-m", *SLURM, *TRAIN, "logger.wandb.notes=a,b,c")
    try:
        requeued, requeued_id = slurm.when_training(workdir, 0)
        wandb_id = slurm.wandb_runs(requeued)[0].name.rsplit("-", 1)[1]
        subprocess.run(["scontrol", "requeue", requeued_id], check=True, timeout=30)
        timed_out, timed_out_id = slurm.when_training(workdir, 1)
        subprocess.run(["scancel", "--signal=USR2", timed_out_id], check=True, timeout=30)
        out, _ = proc.communicate(timeout=1200)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-3000:]
    sweep = slurm.sweep_dir(workdir)
    summary = json.loads((sweep / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["completed"]) == (3, 3)
    straight = slurm.job_dir(sweep, 2)
    s = metrics(straight)
    assert s["resumed_from"] is None
    for run in (requeued, timed_out):
        m = metrics(run)
        assert m["status"] == "completed"
        assert m["resumed_from"] == str(run / "checkpoints" / "last.ckpt")
        assert m["final"] == s["final"] and m["best"] == s["best"]
        assert slurm.history_rows(run) == slurm.history_rows(straight)
        # Each attempt wrote its own offline folder of the same W&B run.
        ids = {folder.name.rsplit("-", 1)[1] for folder in slurm.wandb_runs(run)}
        assert len(slurm.wandb_runs(run)) == 2 and ids == {m["wandb"]["run_id"]}
    assert metrics(requeued)["wandb"]["run_id"] == wandb_id
    assert len({metrics(slurm.job_dir(sweep, i))["wandb"]["run_id"] for i in range(3)}) == 3
    # What a login node would upload, listed without network: every attempt of every job.
    folders = sorted(sweep.glob("*/wandb/offline-run-*"))
    assert len(folders) == 5
    # The last attempt of each job finished its W&B run cleanly.
    assert all(
        read_offline_run(slurm.wandb_runs(run)[-1]).exit_code == 0
        for run in (requeued, timed_out, straight)
    )
    listed = subprocess.run(
        [str(BIN / "wandb"), "sync", "--dry-run", *map(str, folders)],
        env=cli_env(workdir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "Would sync 5 run(s)" in listed.stdout + listed.stderr


def test_scancel_is_recorded_and_counted(workdir: Path):
    proc = slurm.start(workdir, "-m", *SLURM, *TRAIN, "trainer.max_epochs=200", "seed=0")
    try:
        cancelled, job_id = slurm.when_training(workdir, 0)
        # W&B writes its file every 2 s (conf/logger/wandb.yaml) and the cancel ends its service
        # too: what it wrote before then must survive.
        slurm.wait_for(
            lambda: slurm.wandb_history(cancelled), "W&B's first write of a history row", 60
        )
        subprocess.run(["scancel", job_id], check=True, timeout=30)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, out[-3000:]
    m = metrics(cancelled)
    assert m["status"] == "failed"
    assert m["error"].startswith(f"cancelled by SLURM (job {job_id}"), m["error"]
    summary = json.loads((slurm.sweep_dir(workdir) / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["failed"]) == (1, 1)
    assert "sweep: 0/1 jobs completed, 1 failed" in out
    (offline,) = slurm.wandb_runs(cancelled)
    run = read_offline_run(offline)
    assert run.run_id == m["wandb"]["run_id"]
    assert run.history, "the W&B run kept what was logged before the cancel"
    assert run.exit_code != 0  # W&B shows it failed (exit code 1) or crashed (no exit record)


@pytest.mark.slow
def test_ddp_over_two_slurm_tasks_equals_ddp_sim(workdir: Path):
    args = [
        *QUIET,
        "logger=none",
        "debug=limit",
    ]
    ddp = [
        *SLURM,
        "hydra.launcher.tasks_per_node=2",
        "trainer=ddp",
        "trainer.accelerator=cpu",
        "trainer.devices=2",
        "trainer.sync_batchnorm=false",  # SyncBatchNorm needs GPUs
    ]
    on_slurm = run_cli(
        "research-train", "-m", *ddp, *args, cwd=workdir, subprocess=True, timeout=600
    )
    assert on_slurm.returncode == 0, on_slurm.stdout[-3000:] + on_slurm.stderr[-3000:]
    job = slurm.job_dir(slurm.sweep_dir(workdir), 0)
    local = run_cli(
        "research-train", "trainer=ddp_sim", *args, cwd=workdir, subprocess=True, timeout=600
    )
    assert local.returncode == 0, local.stderr[-3000:]
    (local_run,) = (workdir / "logs" / "train" / "runs").glob("*")
    slurm_m, local_m = metrics(job), metrics(local_run)
    assert slurm_m["config"]["trainer"]["strategy"] == "ddp"
    assert slurm_m["final"] == local_m["final"] and slurm_m["best"] == local_m["best"]
    log = (job / "train.log").read_text()
    assert "MEMBER: 1/2" in log  # rank 0 of a 2-process group, the other from SLURM's task 1


ABLATION = """
base: [debug=limit, trainer.enable_progress_bar=false, trainer.enable_model_summary=false]
variants:
  adam: []
  sgd: [optimizer=sgd, optimizer.lr=0.05]
seeds: [0]
"""


def test_ablation_on_slurm_then_skips_what_is_done(workdir: Path):
    conf = workdir / "conf"
    shutil.copytree(Path(__file__).parents[2] / "conf", conf)
    (conf / "ablation" / "tiny.yaml").write_text(ABLATION)
    env = {"RESEARCH_CONFIG_DIR": str(conf)}
    first = run_cli(
        "research-ablate", "tiny", *SLURM, cwd=workdir, subprocess=True, env=env, timeout=600
    )
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "2 of 2 jobs to run" in first.stdout
    found = sorted((workdir / "logs" / "ablations" / "tiny").rglob("metrics.json"))
    assert [json.loads(p.read_text())["status"] for p in found] == ["completed"] * 2
    assert list((workdir / "logs" / "ablations" / "tiny").rglob(".submitit/*_1"))
    again = run_cli(
        "research-ablate", "tiny", *SLURM, cwd=workdir, subprocess=True, env=env, timeout=120
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 of 2 jobs to run" in again.stdout


@pytest.mark.parametrize(
    ("setting", "reason"),
    [
        ("hydra.launcher.partition=nope", "invalid partition specified: nope; "),
        # sbatch itself takes this and SLURM queues it for ever (PartitionConfig): no node of
        # the test cluster has 64 CPUs, and it does not enforce partition limits.
        ("hydra.launcher.cpus_per_task=64", "Requested node configuration is not available; "),
    ],
)
def test_what_sbatch_refuses_or_could_never_run_ends_the_command_in_one_line(
    workdir: Path, setting: str, reason: str
):
    done = run_cli(
        "research-train",
        "-m",
        *SLURM,
        *QUIET,
        setting,
        "seed=0,1",
        cwd=workdir,
        subprocess=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("launcher: error: sbatch refused the jobs: ") and reason in last
    assert not list(workdir.rglob("metrics.json"))
    # submitit names a folder after each job id SLURM gives it: none was queued.
    assert not [p.name for p in workdir.rglob(".submitit/*") if p.is_dir()]


def test_a_stopped_sweep_says_its_slurm_jobs_go_on_and_how_to_cancel_them(workdir: Path):
    """Ctrl-C ends the command, not the jobs SLURM runs; the summary said they never started."""
    proc = slurm.start(workdir, "-m", *SLURM, *TRAIN, "trainer.max_epochs=200", "seed=0")
    try:
        _, job_id = slurm.when_training(workdir, 0)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out[-3000:]
    assert (
        f"sweep: its jobs were handed to submitit_slurm and go on without this command; "
        f"scancel {job_id} stops them"
    ) in out
    summary = json.loads((slurm.sweep_dir(workdir) / "sweep_summary.json").read_text())
    assert summary["stopped_by"] == "SIGINT" and summary["not_started"] is None
    queued = subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True)
    assert queued.stdout.strip(), "the job still runs"
