"""One process at a time in a run dir: a second resume of a running run is refused at once.

The lock is a POSIX record lock (`fcntl.lockf`) on `<run dir>/.lock`: the kernel drops it when
its process ends in any way, SIGKILL included, so a stale lock file never blocks anyone; the
file only says who held it last. Record locks belong to a process, so the CLI (which takes the
lock before Hydra writes into a reused run dir) and the job inside the same process do not
block each other. Torch-free.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

LOCK_FILE = ".lock"


class RunDirBusy(RuntimeError):
    """Another live process holds the run dir."""


class RunDirLock:
    """Held from `acquire` until `release` or the end of the process."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        self._file: IO[str] | None = None

    def acquire(self) -> RunDirLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - kept open while the lock is held
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "an unknown process"
            handle.close()
            raise RunDirBusy(
                f"run dir {self.path.parent} is in use by {_describe(holder)}; wait for it to "
                "end or stop it, then resume"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "command": " ".join(sys.argv),
                }
            )
        )
        handle.flush()
        self._file = handle
        return self

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing drops this process's record locks on the file
            self._file = None


def _describe(holder: str) -> str:
    try:
        info = json.loads(holder)
        return f"pid {info['pid']} on {info['host']} since {info['since']} ({info['command']})"
    except (ValueError, KeyError, TypeError):
        return holder
