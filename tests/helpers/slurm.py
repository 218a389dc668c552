"""Running and watching `launcher=submitit_slurm` jobs on the test cluster of
.ci/slurm_cluster.sh: this host (partition `debug`) and two namespaced nodes (partition `two`)."""

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
from tests.helpers.cli import BIN, cli_env

# One CPU per job so two jobs run side by side on a 2-core node.
SLURM = [
    "launcher=submitit_slurm",
    "hydra.launcher.gpus_per_node=0",  # one task per job: the file's default on CPU nodes
    "hydra.launcher.cpus_per_task=1",
    "hydra.launcher.mem_gb=2",
    "hydra.launcher.timeout_min=15",
]
QUIET = ["trainer.enable_progress_bar=false", "trainer.enable_model_summary=false"]
# ~80 steps an epoch: long enough to interrupt a job between two checkpoints.
TRAIN = [*QUIET, "trainer.max_epochs=4", "data.batch_size=16", "trainer.deterministic=true"]


def cluster_problem() -> str | None:
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


def require_cluster() -> None:
    """Skip without a cluster; fail instead where RESEARCH_REQUIRE_SLURM=1 (as in .ci/run)."""
    require(cluster_problem())


def require(problem: str | None) -> None:
    """Skip for `problem` (what the cluster lacks), or fail under RESEARCH_REQUIRE_SLURM=1."""
    if problem and os.environ.get("RESEARCH_REQUIRE_SLURM") == "1":
        pytest.fail(f"RESEARCH_REQUIRE_SLURM=1 but {problem}")
    if problem:
        pytest.skip(problem)


def cancel_jobs(workdir: Path) -> None:
    """Cancel the jobs a test left queued or running, so the next one finds the nodes free."""
    for sweep in (workdir / "logs").rglob(".submitit"):
        jobs = slurm_jobs(sweep.parent)
        if jobs:
            subprocess.run(["scancel", *jobs.values()], capture_output=True, timeout=30)


def sweep_dir(root: Path) -> Path:
    (sweep,) = (root / "logs" / "train" / "multiruns").glob("*")
    return sweep


def job_dir(sweep: Path, index: int) -> Path:
    (found,) = [p for p in sweep.glob(f"{index}_*") if p.is_dir()]
    return found


def slurm_jobs(sweep: Path) -> dict[int, str]:
    """Array index -> SLURM job id (`<array>_<index>`, or `<id>` alone) of a sweep's jobs."""
    names = [p.name for p in (sweep / ".submitit").iterdir() if p.is_dir()]
    tasks = {int(n.split("_")[1]): n for n in names if re.fullmatch(r"\d+_\d+", n)}
    # A single job is no array; an array's own `<id>` folder holds only its submission script.
    lone = [n for n in names if n.isdigit()]
    return tasks or ({0: lone[0]} if lone else {})


def wait_for(condition, what: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def history_rows(run_dir: Path) -> list[dict]:
    path = run_dir / "history.jsonl"
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: v for k, v in row.items() if k != "time_s"} for row in rows]


def wandb_runs(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "wandb").glob("offline-run-*"))


def wandb_history(run_dir: Path) -> list[dict]:
    """The history rows W&B has written so far ([] before its first write)."""
    runs = wandb_runs(run_dir)
    try:
        return read_offline_run(runs[0]).history if runs else []
    except (OSError, ValueError):  # a record still being written
        return []


def start(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "research-train"), *args],
        cwd=root,
        env=cli_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def when_training(root: Path, index: int) -> tuple[Path, str]:
    """Wait until job `index` of the sweep has checkpointed its first epoch."""
    wait_for(lambda: list((root / "logs").glob("train/multiruns/*/.submitit")), "submission")
    sweep = sweep_dir(root)
    wait_for(lambda: list(sweep.glob(f"{index}_*/checkpoints/last.ckpt")), f"job {index}")
    job = job_dir(sweep, index)
    wait_for(lambda: len(history_rows(job)) >= 1, f"job {index}'s first epoch")
    return job, slurm_jobs(sweep)[index]
