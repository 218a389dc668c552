"""A run dir held by another live process, as a concurrent run holds it: a child process takes
the run dir's lock and keeps it until the block ends."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLD = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.lockf(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


@contextmanager
def held_by_another_process(run_dir: Path) -> Iterator[int]:
    """Within the block a child process holds `run_dir`'s lock; yields its pid."""
    run_dir.mkdir(parents=True, exist_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(run_dir / ".lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        yield child.pid
    finally:
        child.kill()
        child.wait()
