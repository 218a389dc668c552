"""Turning any exception into the one line a user sees."""

from __future__ import annotations


def one_line(err: BaseException) -> str:
    """The innermost meaningful message: Hydra's instantiate wrapper is peeled off."""
    from hydra.errors import InstantiationException

    while isinstance(err, InstantiationException) and err.__cause__ is not None:
        err = err.__cause__
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    message = lines[0] if lines else ""
    return f"{type(err).__name__}: {message}" if message else type(err).__name__
