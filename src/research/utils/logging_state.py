"""Logging as it was before a job: Hydra configures the root logger for each job it runs (a
console handler and the job's log file), which in a notebook or a test process would outlive
the job."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def root_logging_restored() -> Iterator[None]:
    """Within the block anything may reconfigure logging; afterwards the root logger has its
    handlers and level back, and the handlers added meanwhile are closed (no log file is held
    open)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
