"""Start a console script, wait until its run has logged some epochs, then signal it."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers.cli import BIN, cli_env


def history_rows(root: Path) -> int:
    """Epoch rows logged so far by the newest run (or sweep job) under `root`."""
    files = sorted(root.glob("**/history.jsonl"), key=lambda p: p.stat().st_mtime)
    return len(files[-1].read_text().splitlines()) if files else 0


def signal_when(
    workdir: Path,
    args: list[str],
    signum: int,
    ready: Callable[[], bool],
    prog: str = "research-train",
) -> subprocess.CompletedProcess[str]:
    """Run `prog args` in `workdir`, send `signum` as soon as `ready()`, and wait."""
    proc = subprocess.Popen(
        [str(BIN / prog), *args],
        cwd=workdir,
        env=cli_env(workdir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if ready():
            proc.send_signal(signum)
            break
        time.sleep(0.05)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def signal_after_epochs(
    workdir: Path, args: list[str], signum: int, rows: int = 1, prog: str = "research-train"
) -> subprocess.CompletedProcess[str]:
    """Run `prog args` in `workdir`, send `signum` once `rows` epochs are logged, and wait.
    The row of epoch e is written as epoch e's checkpoint is saved, so with `rows` >= 2 the
    checkpoint of epoch `rows` - 2 is on disk."""
    return signal_when(workdir, args, signum, lambda: history_rows(workdir) >= rows, prog)
