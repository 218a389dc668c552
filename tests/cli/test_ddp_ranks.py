"""DDP ranks > 0 run exactly their job: inside sweeps (basic launcher, Optuna, submitit_local)
and never outliving the job that started them."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import optuna
import psutil
import pytest

from tests.helpers.cli import BIN, FAST, cli_env, run_cli

DDP = [*FAST, "trainer=ddp_sim", "logger=none", "trainer.max_epochs=1"]


def _sweeps(root: Path) -> list[Path]:
    return sorted((root / "logs" / "train" / "multiruns").glob("*"))


def _job_dirs(sweep: Path) -> list[Path]:
    return sorted(p for p in sweep.iterdir() if p.is_dir() and not p.name.startswith("."))


def _check_ddp_jobs(root: Path, jobs: int) -> list[dict]:
    """One sweep, `jobs` completed jobs, each trained by two ranks in its own run dir."""
    (sweep,) = _sweeps(root)  # rank 1 started no sweep of its own
    summary = json.loads((sweep / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["completed"]) == (jobs, jobs)
    found = []
    for job in _job_dirs(sweep):
        assert (job / "train_rank1.log").is_file(), f"{job.name}: rank 1 did not run this job"
        found.append(json.loads((job / "metrics.json").read_text()))
    assert [m["status"] for m in found] == ["completed"] * jobs
    assert all(m["config"]["trainer"]["devices"] == 2 for m in found)
    assert all(m["ddp"]["backend"] == "gloo" and m["ddp"]["world_size"] == 2 for m in found)
    return found


@pytest.mark.slow
def test_ddp_inside_a_list_sweep_runs_each_job_once(workdir: Path):
    done = run_cli("research-train", "-m", "seed=0,1", *DDP, cwd=workdir, subprocess=True)
    assert done.returncode == 0, done.stderr[-2000:]
    found = _check_ddp_jobs(workdir, jobs=2)
    assert sorted(m["seed"] for m in found) == [0, 1]


@pytest.mark.slow
def test_ddp_inside_an_optuna_search_reports_every_trial(workdir: Path):
    args = ["-m", "hparams_search=optuna", "hydra.sweeper.n_trials=2", *DDP]
    done = run_cli("research-train", *args, cwd=workdir, subprocess=True)
    assert done.returncode == 0, done.stderr[-2000:]
    found = _check_ddp_jobs(workdir, jobs=2)
    (db,) = (workdir / "logs" / "optuna").glob("*.db")
    study = optuna.load_study(study_name=db.stem, storage=f"sqlite:///{db}")
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    assert sorted(t.value for t in study.trials) == sorted(m["best"]["val/acc"] for m in found)


@pytest.mark.slow
def test_ddp_under_submitit_local(workdir: Path):
    done = run_cli(
        "research-train",
        "-m",
        "launcher=submitit_local",
        "seed=0",
        *DDP,
        cwd=workdir,
        subprocess=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    _check_ddp_jobs(workdir, jobs=1)


def _command_line(process: psutil.Process) -> str:
    """A process's command line; '' for one that ended meanwhile (short-lived helpers such as
    `git` come and go while the job starts)."""
    try:
        return " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return ""


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.slow
def test_ranks_die_with_a_killed_job(workdir: Path):
    proc = subprocess.Popen(
        [str(BIN / "research-train"), *DDP, "trainer.max_epochs=1000"],
        cwd=workdir,
        env=cli_env(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ranks: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not ranks:
            time.sleep(0.5)
            children = psutil.Process(proc.pid).children(recursive=True)
            ranks = [c for c in children if "research.cli" in _command_line(c)]
        assert ranks, "the job never started its rank 1"
        while time.monotonic() < deadline and not list(workdir.rglob("history.jsonl")):
            time.sleep(0.5)  # both ranks are training
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        alive = ranks
        while time.monotonic() < deadline + 20 and alive:
            time.sleep(0.5)
            alive = [rank for rank in alive if _alive(rank)]
        assert not alive, f"rank processes outlived the killed job: {[p.pid for p in alive]}"
    finally:
        for rank in ranks:
            if _alive(rank):
                rank.kill()
        if proc.poll() is None:
            proc.kill()
