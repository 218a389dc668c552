"""A console that fails never ends a run: `research-train | head -5`, `>&-`, stdout on a full disk.

When the reader of a pipe goes away, every later write raises BrokenPipeError (rich turns it
into SystemExit, logging prints a traceback per record, Python exits 120 at shutdown); a stdout
on a full disk raises OSError(ENOSPC). The run's real output is its run dir, so on the first
failed write the stream's file descriptor is pointed at /dev/null (as rich does for a broken
pipe, but without exiting) and the run goes on silently.

A console closed before the start (`>&-`, `2>&-`) leaves `sys.stdout`/`sys.stderr` None, which
progress bars, loggers and W&B do not expect, and leaves the descriptor free: the next file the
process opens would get it, and every write meant for the console (a child process's output, a
C library's message) would land in that file. Both get /dev/null instead.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

# The standard descriptors, each with the sys attribute naming its stream (stdin is never read).
_STANDARD = {0: None, 1: "stdout", 2: "stderr"}


class QuietOnFailure:
    """Wraps a text stream; a write or flush that fails sends it, from then on, to /dev/null."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _silence(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        self._stream = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):  # ValueError: the stream was closed
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            self._silence()

    def isatty(self) -> bool:
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _fill_if_closed(fd: int) -> None:
    """Point a closed standard descriptor at /dev/null, so no file the run opens takes it."""
    try:
        os.fstat(fd)
    except OSError:
        devnull = os.open(os.devnull, os.O_RDWR)
        if devnull != fd:
            os.dup2(devnull, fd)
            os.close(devnull)


def protect_console() -> None:
    """Make stdout and stderr of this process survive a closed console, a closed pipe or a full
    device."""
    for fd, name in _STANDARD.items():
        _fill_if_closed(fd)
        if name is None:
            continue
        stream = getattr(sys, name)
        if stream is None:
            stream = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        if not isinstance(stream, QuietOnFailure):
            setattr(sys, name, QuietOnFailure(stream))
