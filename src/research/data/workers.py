"""DataLoader worker processes that die with the process that started them.

torch's workers notice a dead parent only between batches (a watchdog polled every few seconds);
a worker inside a slow `__getitem__`, or still starting, outlives a SIGKILLed run and holds its
memory and files as an orphan. On Linux each worker asks the kernel for SIGKILL when its parent
dies (prctl PR_SET_PDEATHSIG); elsewhere the watchdog is all there is. The request is tied to the
parent *thread* that started the worker: loaders must be iterated from a thread that outlives
them (Lightning's loops run in the main thread).
"""

from __future__ import annotations

import multiprocessing
import os

from research.utils.process import die_with


def worker_init(worker_id: int) -> None:
    """A DataLoader's `worker_init_fn`: the worker dies with its parent, and is seeded as
    Lightning seeds it after `seed_everything(..., workers=True)` (it sets PL_SEED_WORKERS):
    Lightning adds its own seeding only to loaders without a `worker_init_fn`, which every
    loader built here now has."""
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        die_with(parent.pid)
    if int(os.environ.get("PL_SEED_WORKERS", 0)):
        from lightning.fabric.utilities.seed import pl_worker_init_function

        pl_worker_init_function(worker_id)
