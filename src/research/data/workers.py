"""DataLoader worker processes that die with the process that started them.

torch's workers notice a dead parent only between batches (a watchdog polled every few seconds);
a worker inside a slow `__getitem__`, or still starting, outlives a SIGKILLed run and holds its
memory and files as an orphan. On Linux each worker asks the kernel for SIGKILL when its parent
dies (prctl PR_SET_PDEATHSIG); elsewhere the watchdog is all there is. The request is tied to the
parent *thread* that started the worker: loaders must be iterated from a thread that outlives
them (Lightning's loops run in the main thread).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable

# linux/prctl.h
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Have this process killed when its parent dies (Linux; a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # the kernel refused: torch's watchdog still ends the worker between batches
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        # The parent died before the request was made, so no signal will come.
        os.kill(os.getpid(), signal.SIGKILL)


class WorkerInit:
    """A DataLoader's `worker_init_fn`: the worker dies with its parent, then runs `then`.

    Without `then`, the worker is seeded as Lightning seeds it after `seed_everything(...,
    workers=True)` (it sets PL_SEED_WORKERS): Lightning adds its own seeding only to loaders that
    have no `worker_init_fn`, which every loader built here now has.
    """

    def __init__(self, then: Callable[[int], None] | None = None) -> None:
        self.then = then

    def __call__(self, worker_id: int) -> None:
        die_with_parent()
        if self.then is not None:
            self.then(worker_id)
        elif int(os.environ.get("PL_SEED_WORKERS", 0)):
            from lightning.fabric.utilities.seed import pl_worker_init_function

            pl_worker_init_function(worker_id)
