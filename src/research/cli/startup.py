"""A command's heavy imports (Lightning, and with it torch) without the garbage collector's passes
over them.

Importing what a run needs creates about half a million objects that live as long as the
process. Python's cyclic collector passes over every tracked object each time the long-lived ones
grow by a quarter: eight full passes before a 1-step run's job began, 1.0 s in all on a 2-core
CPU, the last one 268 ms. So a command imports them with the collector off, then freezes what is
alive (`gc.freeze`: later passes skip those objects, as the final ones skip everything, see
`research.cli.shutdown`) and turns the collector on again: a 1-step run takes 0.78-0.82 of the
time it took with those passes (docs: benchmarks, "Start-up with W&B"). What the imports left in
reference cycles stays, frozen: about 9 MiB against the 0.9 GiB that the imports hold.

Once per process: in a multirun's later jobs the modules are loaded already, and freezing again
would keep a finished job's garbage alive. The Python API (`research.api`) leaves its caller's
collector alone.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_done = False


@contextmanager
def imports_without_collections() -> Iterator[None]:
    """Run the block (its imports) with the collector off, the first time in this process; then
    freeze every object alive and turn the collector back on, as it was."""
    global _done
    if _done:
        yield
        return
    _done = True
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
