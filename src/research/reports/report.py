"""What a report is, as `build_report` returns it and the writers of its other forms (paper
tables, provenance, W&B) read it: its own module, so those writers need not import the builder
that calls them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from research.reports.stats import Comparison


@dataclass
class Report:
    """What `build_report` read and wrote."""

    source: Path
    out_dir: Path
    metrics: list[str]
    runs: pd.DataFrame  # one row per run (runs.csv)
    table: pd.DataFrame  # one row per variant (report.csv)
    markdown: str  # the tables with their legends
    files: list[Path]  # every file written
    warnings: list[str]
    baseline: str | None = None
    comparisons: dict[str, list[Comparison]] = field(default_factory=dict)
    directions: dict[str, str | None] = field(default_factory=dict)
    origin: str = ""  # the source as the report's files name it (never a machine path)
    ablation_name: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # what a re-render repeats
    recorded: bool = False  # read from a recorded runs.csv, not from run dirs
    missing: str | None = None  # what the report could not show, and why
    plots: list[Path] = field(default_factory=list)

    @property
    def usable(self) -> int:
        """Completed runs with a value in at least one of the table's metrics: with none, the
        report has nothing to compare (every run failed, diverged or could not be read)."""
        done = self.runs.loc[self.runs["status"] == "completed", self.metrics]
        return int(done.notna().any(axis=1).sum())
