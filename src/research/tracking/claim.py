"""One attempt per run id under a folder, however many callers launch it at once.

Two `research-ablate NAME` started together both plan every job; each job, right before it
starts, claims its run id: under a short lock on the folder it looks for another attempt that
completed or is running, and if there is none it locks its own run dir and marks it with the run
id, so the next caller's look sees it. The folder lock is held for a scan only, never for a run.
Torch-free.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

from research.tracking.run_dir import other_attempt, write_identity
from research.tracking.run_lock import RunDirLock

CLAIM_FILE = ".claim.lock"


def claim_run(root: Path, run_dir: Path, run_id: str) -> RunDirLock | tuple[Path, str]:
    """The held lock of `run_dir`, now marked as this run id's attempt; or the other attempt
    (its dir and `completed` / `running`) that makes this one redundant."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / CLAIM_FILE, "a") as guard:
        fcntl.lockf(guard, fcntl.LOCK_EX)  # waits for another caller's scan, never for a run
        other = other_attempt(root, run_id, exclude=run_dir)
        if other is not None:
            return other
        lock = RunDirLock(run_dir).acquire()
        write_identity(run_dir, run_id)
        return lock
