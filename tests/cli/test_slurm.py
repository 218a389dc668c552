"""Sweeps through `launcher=submitit_slurm` on a real one-node SLURM cluster (.ci/slurm_cluster.sh).

Skipped where `sbatch` cannot run jobs (no cluster, no root to start one); with
RESEARCH_REQUIRE_SLURM=1 (as `.ci/run` sets) that is a failure instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from research.tracking.wandb_reader import read_offline_run
from tests.helpers.cli import BIN, cli_env, metrics, run_cli

# Jobs queue behind each other on a 2-core node; a loaded machine needs more than the default.
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.timeout(1800)]

# One CPU per job so two jobs run side by side on a 2-core node.
SLURM = [
    "launcher=submitit_slurm",
    "hydra.launcher.gpus_per_node=0",
    "hydra.launcher.tasks_per_node=1",
    "hydra.launcher.cpus_per_task=1",
    "hydra.launcher.mem_gb=2",
    "hydra.launcher.timeout_min=15",
]
QUIET = ["trainer.enable_progress_bar=false", "trainer.enable_model_summary=false"]
# ~80 steps an epoch: long enough to interrupt a job between two checkpoints.
TRAIN = [*QUIET, "trainer.max_epochs=4", "data.batch_size=16", "trainer.deterministic=true"]


def _cluster_problem() -> str | None:
    if shutil.which("sbatch") is None:
        return "sbatch is not installed (run .ci/slurm_cluster.sh as root)"
    try:
        state = subprocess.run(
            ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20
        ).stdout.split()
    except (OSError, subprocess.SubprocessError) as err:
        return f"sinfo failed: {err}"
    if not any(s.rstrip("*") in ("idle", "mix", "alloc", "comp") for s in state):
        return f"no SLURM node is up (sinfo: {state}); run .ci/slurm_cluster.sh as root"
    return None


@pytest.fixture(scope="module", autouse=True)
def slurm_cluster() -> None:
    problem = _cluster_problem()
    if problem and os.environ.get("RESEARCH_REQUIRE_SLURM") == "1":
        pytest.fail(f"RESEARCH_REQUIRE_SLURM=1 but {problem}")
    if problem:
        pytest.skip(problem)


@pytest.fixture(autouse=True)
def cancel_leftovers(workdir: Path):
    """A failed test must not leave its jobs queued for the next one."""
    yield
    for sweep in (workdir / "logs").rglob(".submitit"):
        jobs = _slurm_jobs(sweep.parent)
        if jobs:
            subprocess.run(["scancel", *jobs.values()], capture_output=True, timeout=30)


def _sweep(root: Path) -> Path:
    (sweep,) = (root / "logs" / "train" / "multiruns").glob("*")
    return sweep


def _job_dir(sweep: Path, index: int) -> Path:
    (found,) = [p for p in sweep.glob(f"{index}_*") if p.is_dir()]
    return found


def _slurm_jobs(sweep: Path) -> dict[int, str]:
    """Array index -> SLURM job id (`<array>_<index>`, or `<id>` alone) of a sweep's jobs."""
    names = [p.name for p in (sweep / ".submitit").iterdir() if p.is_dir()]
    tasks = {int(n.split("_")[1]): n for n in names if re.fullmatch(r"\d+_\d+", n)}
    # A single job is no array; an array's own `<id>` folder holds only its submission script.
    lone = [n for n in names if n.isdigit()]
    return tasks or ({0: lone[0]} if lone else {})


def _wait_for(condition, what: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _history_rows(run_dir: Path) -> list[dict]:
    path = run_dir / "history.jsonl"
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: v for k, v in row.items() if k != "time_s"} for row in rows]


def _wandb_runs(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "wandb").glob("offline-run-*"))


def _wandb_history(run_dir: Path) -> list[dict]:
    """The history rows W&B has written so far ([] before its first write)."""
    runs = _wandb_runs(run_dir)
    try:
        return read_offline_run(runs[0]).history if runs else []
    except (OSError, ValueError):  # a record still being written
        return []


def _start(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "research-train"), *args],
        cwd=root,
        env=cli_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _when_training(root: Path, index: int) -> tuple[Path, str]:
    """Wait until job `index` of the sweep has checkpointed its first epoch."""
    _wait_for(lambda: list((root / "logs").glob("train/multiruns/*/.submitit")), "submission")
    sweep = _sweep(root)
    _wait_for(lambda: list(sweep.glob(f"{index}_*/checkpoints/last.ckpt")), f"job {index}")
    job = _job_dir(sweep, index)
    _wait_for(lambda: len(_history_rows(job)) >= 1, f"job {index}'s first epoch")
    return job, _slurm_jobs(sweep)[index]


@pytest.mark.slow
def test_array_preemption_and_time_limit_resume_like_an_uninterrupted_run(workdir: Path):
    """Three array jobs, same seed: 0 requeued by `scontrol requeue` (preemption), 1 sent the
    signal SLURM sends before its time limit (submitit's `--signal=USR2@...`), 2 untouched."""
    proc = _start(workdir, "-m", *SLURM, *TRAIN, "logger.wandb.notes=a,b,c")
    try:
        requeued, requeued_id = _when_training(workdir, 0)
        wandb_id = _wandb_runs(requeued)[0].name.rsplit("-", 1)[1]
        subprocess.run(["scontrol", "requeue", requeued_id], check=True, timeout=30)
        timed_out, timed_out_id = _when_training(workdir, 1)
        subprocess.run(["scancel", "--signal=USR2", timed_out_id], check=True, timeout=30)
        out, _ = proc.communicate(timeout=1200)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-3000:]
    sweep = _sweep(workdir)
    summary = json.loads((sweep / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["completed"]) == (3, 3)
    straight = _job_dir(sweep, 2)
    s = metrics(straight)
    assert s["resumed_from"] is None
    for run in (requeued, timed_out):
        m = metrics(run)
        assert m["status"] == "completed"
        assert m["resumed_from"] == str(run / "checkpoints" / "last.ckpt")
        assert m["final"] == s["final"] and m["best"] == s["best"]
        assert _history_rows(run) == _history_rows(straight)
        # Each attempt wrote its own offline folder of the same W&B run.
        ids = {folder.name.rsplit("-", 1)[1] for folder in _wandb_runs(run)}
        assert len(_wandb_runs(run)) == 2 and ids == {m["wandb"]["run_id"]}
    assert metrics(requeued)["wandb"]["run_id"] == wandb_id
    assert len({metrics(_job_dir(sweep, i))["wandb"]["run_id"] for i in range(3)}) == 3
    # What a login node would upload, listed without network: every attempt of every job.
    folders = sorted(sweep.glob("*/wandb/offline-run-*"))
    assert len(folders) == 5
    # The last attempt of each job finished its W&B run cleanly.
    assert all(
        read_offline_run(_wandb_runs(run)[-1]).exit_code == 0
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
    proc = _start(workdir, "-m", *SLURM, *TRAIN, "trainer.max_epochs=200", "seed=0")
    try:
        cancelled, job_id = _when_training(workdir, 0)
        # W&B writes its file every 2 s (conf/logger/wandb.yaml) and the cancel ends its service
        # too: what it wrote before then must survive.
        _wait_for(lambda: _wandb_history(cancelled), "W&B's first write of a history row", 60)
        subprocess.run(["scancel", job_id], check=True, timeout=30)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, out[-3000:]
    m = metrics(cancelled)
    assert m["status"] == "failed"
    assert m["error"].startswith(f"cancelled by SLURM (job {job_id}"), m["error"]
    summary = json.loads((_sweep(workdir) / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["failed"]) == (1, 1)
    assert "sweep: 0/1 jobs completed, 1 failed" in out
    (offline,) = _wandb_runs(cancelled)
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
    job = _job_dir(_sweep(workdir), 0)
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
