"""A child process that dies with its parent: no orphan outlives a killed run.

On Linux the child asks the kernel for SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG);
elsewhere nothing is asked. The request is tied to the parent *thread* that started the child.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

# linux/prctl.h
_PR_SET_PDEATHSIG = 1


def die_with(parent_pid: int) -> None:
    """Have this process killed when the process `parent_pid` (its parent) dies. The parent may
    have died before the request took effect, so no signal would come: then exit now."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)
