"""Ctrl-C, SIGTERM and SIGHUP become one exception that carries its signal, whoever catches it.

Python turns only SIGINT into an exception; SIGTERM (what `timeout`, `kill` and `scancel` send)
and SIGHUP (a closed terminal) would kill the process before any record is written, and
Lightning turns a KeyboardInterrupt into `sys.exit(1)` and its own SIGTERM notice into a
`SIGTERMException` (a SystemExit with code 0). `Interrupted` is a KeyboardInterrupt, so Lightning
shuts down gracefully on it (on_exception hooks, teardown); the SystemExit it then raises keeps
our exception as its context, so `interruption` still finds which signal ended the run.
Torch-free: the CLI installs the handlers before anything heavy is imported.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal; `exit_code` is the shell's convention, 128 + the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def interruption(err: BaseException | None) -> Interrupted | None:
    """The signal behind `err`: an Interrupted in its chain (cause or context), or Lightning's
    SIGTERMException (a SIGTERM that arrived while Lightning's handler was the only one)."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, Interrupted):
            return err
        if type(err).__name__ == "SIGTERMException":
            return Interrupted(signal.SIGTERM)
        if type(err) is KeyboardInterrupt:
            return Interrupted(signal.SIGINT)
        err = err.__cause__ or err.__context__
    return None


def _raise(signum: int, _: FrameType | None) -> None:
    """The first signal raises; a second one of the same kind gets the default behaviour, so a
    user who insists (Ctrl-C twice) is never stuck in a slow shutdown."""
    signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
    raise Interrupted(signum)


@contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise `Interrupted`; the previous handlers
    come back afterwards (Lightning sets SIGINT to ignored after a Ctrl-C)."""
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    for signum in SIGNALS:
        signal.signal(signum, _raise)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
