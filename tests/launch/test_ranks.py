"""The DDP ranks a job starts itself: their command, and that they die with the job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import lightning as L

from research.launch import ranks


def test_a_rank_runs_exactly_its_jobs_overrides_in_its_run_dir(tmp_path: Path):
    run_dir = tmp_path / "run, with 'quotes'"
    command = ranks.rank_command("train", ["seed=3", "model=cnn"], run_dir, rank=1)
    assert command[:4] == [sys.executable, "-m", "research.cli", "train"]
    assert command[4:6] == ["seed=3", "model=cnn"]
    assert "hydra.run.dir='" + str(tmp_path) + "/run, with \\'quotes\\''" in command
    assert command[-2:] == ["hydra.output_subdir=null", "hydra.job.name=train_rank1"]


def test_a_single_process_trainer_starts_no_rank(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    trainer = L.Trainer(accelerator="cpu", devices=1, logger=False)
    with ranks.node_ranks(trainer, "train", [], Path("unused")):
        assert "LOCAL_RANK" not in os.environ  # no rank environment was set up


def test_outside_a_job_die_with_parent_does_nothing(monkeypatch):
    monkeypatch.delenv(ranks.PARENT_ENV, raising=False)
    ranks.die_with_parent()  # no exit, no prctl


def test_a_rank_whose_job_is_already_gone_exits_at_once():
    code = "from research.launch import ranks; ranks.die_with_parent(); print('alive')"
    env = {**os.environ, ranks.PARENT_ENV: "1"}  # pid 1 is not its parent
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "alive" not in done.stdout


def test_a_rank_dies_when_its_job_is_killed(tmp_path: Path):
    """The job (a parent process) starts a rank and is SIGKILLed: the rank must not outlive it."""
    pid_file = tmp_path / "rank.pid"
    job = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        env = {{**os.environ, {ranks.PARENT_ENV!r}: str(os.getpid())}}
        rank = (
            "import os, time; from research.launch import ranks; ranks.die_with_parent(); "
            "open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
        )
        subprocess.Popen([sys.executable, "-c", rank], env=env)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", job])
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    rank_pid = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(rank_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(rank_pid)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")
