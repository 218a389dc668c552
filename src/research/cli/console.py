"""A console that fails never ends a run: `research-train | head -5`, stdout on a full disk.

When the reader of a pipe goes away, every later write raises BrokenPipeError (rich turns it
into SystemExit, logging prints a traceback per record, Python exits 120 at shutdown); a stdout
on a full disk raises OSError(ENOSPC). The run's real output is its run dir, so on the first
failed write the stream's file descriptor is pointed at /dev/null (as rich does for a broken
pipe, but without exiting) and the run goes on silently.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


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
        except OSError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._silence()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def protect_console() -> None:
    """Make stdout and stderr of this process survive a closed pipe or a full device."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, QuietOnFailure):
            setattr(sys, name, QuietOnFailure(stream))
