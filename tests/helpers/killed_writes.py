"""What a process killed in the middle of an atomic write leaves behind."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

# Writes `target` with `write_atomic` and is SIGKILLed after the bytes are in the temporary file
# and before its rename: the moment a kill during a checkpoint write hits.
_KILLED_WRITER = """
import os, signal, sys
from research.utils import atomic
atomic.os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
atomic.write_atomic(sys.argv[1], b"half of a checkpoint")
"""


def killed_mid_write(target: Path) -> Path:
    """Write `target` in a process that is killed mid-write; the temporary file it left."""
    before = set(target.parent.iterdir()) if target.parent.is_dir() else set()
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(target)], check=False)
    assert proc.returncode == -signal.SIGKILL
    (leftover,) = set(target.parent.iterdir()) - before - {target}
    return leftover
