"""A run whose stdout is not a terminal (a SLURM .out file, nohup, CI) logs its progress."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers.cli import FAST, run_cli, run_dirs


@pytest.mark.slow
def test_piped_run_logs_progress_and_validation_lines(workdir: Path):
    done = run_cli(
        "research-train",
        *FAST,
        "logger=none",
        "callbacks.progress_log.every_n_steps=2",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    steps = re.findall(
        r"epoch (\d+)  step (\d+)/(\d+)  loss (\d+\.\d{4})  [\d.]+ steps/s  ETA \d+m\d\ds",
        done.stdout,
    )
    assert len(steps) >= 2, done.stdout[-3000:]
    assert {epoch for epoch, *_ in steps} == {"0", "1"}  # both epochs of debug=limit
    assert all(int(step) <= int(total) for _, step, total, _ in steps)
    validations = re.findall(
        r"validation  epoch (\d+)  step \d+  .*val/acc=(\d\.\d{4})", done.stdout
    )
    assert [epoch for epoch, _ in validations] == ["0", "1"]
    # The same lines reach the job's log file.
    log = (run_dirs(workdir)[0] / "train.log").read_text()
    assert log.count("validation  epoch") == 2


def _closed() -> io.StringIO:
    stream = io.StringIO()
    stream.close()
    return stream


@pytest.mark.parametrize("stdout", [None, _closed()], ids=["none", "closed"])
def test_a_missing_or_closed_stdout_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch, stdout):
    # `>&-` leaves sys.stdout None; an embedding host may close it: progress goes to the log.
    from research.callbacks.progress import ProgressLog

    monkeypatch.setattr(sys, "stdout", stdout)
    callback = ProgressLog()
    callback.on_train_start(SimpleNamespace(is_global_zero=True, global_step=0), None)
    assert callback.active
