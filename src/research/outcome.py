"""Statuses of the jobs this process ran, so the CLI can turn them into an exit code."""

from __future__ import annotations

STATUSES: list[str] = []
SWEEP_FAILURES: list[int] = []


def record(status: str) -> None:
    STATUSES.append(status)


def failed() -> bool:
    """True if any job run here, or any job of a finished sweep, did not complete."""
    return any(s != "completed" for s in STATUSES) or any(n > 0 for n in SWEEP_FAILURES)


def reset() -> None:
    STATUSES.clear()
    SWEEP_FAILURES.clear()
