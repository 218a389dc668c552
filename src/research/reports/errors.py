"""The one error a report raises for what its user passed (a source, a metric, a direction)."""

from __future__ import annotations


class ReportError(ValueError):
    """A one-line message naming what was wrong and what is valid; the CLI exits with 2."""


class RunsWarning(UserWarning):
    """A run dir that is counted but could not be read as a finished run (or was superseded)."""
