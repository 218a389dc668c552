"""Checkpoints are written beside training: a run killed in the middle of one resumes from the
previous, intact `last.ckpt` and completes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from research.tracking.checkpoints import read_checkpoint
from tests.helpers.cli import BIN, FAST, cli_env, metrics, run_cli, run_dirs

# Two 2048-wide hidden layers: ~4.7M weights, a ~57 MB checkpoint with Adam's moments, so a write
# (serialize, write, fsync) lasts long enough to be caught in the act.
# Monitored with mode=min, the epoch number never improves after epoch 0, so every later
# `last.ckpt` is a whole write of its own, not a link to a new `best.ckpt` (made in an instant).
ARGS = [
    *FAST,
    "logger=none",
    "trainer.max_epochs=4",
    "model.net.hidden_sizes=[2048,2048]",
    "callbacks.model_checkpoint.monitor=epoch",
    "callbacks.model_checkpoint.mode=min",
]


def _kill_while_last_ckpt_is_rewritten(workdir: Path) -> tuple[Path, Path]:
    """SIGKILL the run once the temporary file of a second (or later) `last.ckpt` appears; the
    run dir and that temporary."""
    proc = subprocess.Popen(
        [str(BIN / "research-train"), *ARGS],
        cwd=workdir,
        env=cli_env(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    caught = None
    while caught is None and time.monotonic() < deadline and proc.poll() is None:
        runs = run_dirs(workdir)
        folder = runs[0] / "checkpoints" if runs else None
        if folder is not None and (folder / "last.ckpt").is_file():
            caught = next(folder.glob(".last.ckpt.*.tmp"), None)
        if caught is None:
            time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert caught is not None and proc.returncode == -signal.SIGKILL, "no write was caught"
    return caught.parent.parent, caught


@pytest.mark.slow
def test_a_run_killed_during_a_checkpoint_write_resumes_from_the_previous_one(workdir: Path):
    run, partial = _kill_while_last_ckpt_is_rewritten(workdir)
    assert partial.exists()  # the kill landed in the middle of the write
    assert not (run / "metrics.json").exists()
    saved = read_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"]  # loads: intact
    assert 0 <= saved < 3

    resumed = run_cli("research-train", *ARGS, "ckpt_path=last", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    m = metrics(run)
    assert m["status"] == "completed"
    assert m["resumed_from"] == str(run / "checkpoints" / "last.ckpt")
    assert not partial.exists()
    assert read_checkpoint(run / "checkpoints" / "last.ckpt")["epoch"] == 3
    rows = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in rows] == [0, 1, 2, 3]
