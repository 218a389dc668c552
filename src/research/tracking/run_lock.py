"""One process at a time in a run dir: a second launch into a live run dir is refused at once.

The lock is a POSIX record lock (`fcntl.lockf`) on `<run dir>/.lock`: the kernel drops it when
its process ends in any way, SIGKILL included, so a stale lock file never blocks anyone; the
file only says who held it last. Record locks belong to a process, and closing any handle of
the file drops all of them, so this process keeps one handle per lock file however often it
acquires it: the CLI (which takes the lock before Hydra writes anything into the run dir) and the
job inside the same process share it. Torch-free.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

LOCK_FILE = ".lock"

# Lock files this process holds: the one open handle of each, and how many holders share it.
_HELD: dict[Path, tuple[IO[str], int]] = {}


class RunDirBusy(RuntimeError):
    """Another live process holds the run dir."""


def _lock_path(run_dir: Path) -> Path:
    return (run_dir / LOCK_FILE).resolve()


class RunDirLock:
    """Held from `acquire` until `release` or the end of the process."""

    def __init__(self, run_dir: Path) -> None:
        self.path = _lock_path(run_dir)
        self._held = False

    def acquire(self) -> RunDirLock:
        if self.path in _HELD:
            handle, holders = _HELD[self.path]
            _HELD[self.path] = (handle, holders + 1)
            self._held = True
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - kept open while the lock is held
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _written_holder(handle)
            handle.close()
            raise RunDirBusy(
                f"run dir {self.path.parent} is in use by {_describe(holder)}; wait for it to "
                "end or stop it, then resume"
            ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(_holder())
            handle.flush()
        except OSError:
            handle.close()
            raise
        _HELD[self.path] = (handle, 1)
        self._held = True
        return self

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        handle, holders = _HELD.pop(self.path)
        if holders > 1:
            _HELD[self.path] = (handle, holders - 1)
        else:
            handle.close()  # closing drops this process's record locks on the file


def in_use(run_dir: Path) -> bool:
    """Whether a live process (this one included) holds the run dir's lock: a run without a
    recorded outcome is still running if so, and was killed if not."""
    path = _lock_path(run_dir)
    if path in _HELD:
        return True
    try:
        handle = open(path)  # noqa: SIM115 - closed below; this process holds no lock on it
    except OSError:
        return False
    with handle:
        try:
            fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        return False


def _holder() -> str:
    return json.dumps(
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv),
        }
    )


def _written_holder(handle: IO[str]) -> str:
    """What the lock file says about its holder. A holder that took the lock a moment ago may
    not have written it yet: wait for it briefly rather than name no one."""
    for _ in range(50):
        handle.seek(0)
        holder = handle.read().strip()
        if holder:
            return holder
        time.sleep(0.01)
    return "an unknown process"


def _describe(holder: str) -> str:
    try:
        info = json.loads(holder)
        return f"pid {info['pid']} on {info['host']} since {info['since']} ({info['command']})"
    except (ValueError, KeyError, TypeError):
        return holder
