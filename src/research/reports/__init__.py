"""Run aggregation: many run dirs -> a table per variant (mean +- std over seeds) and plots.

Reads only the files runs leave on disk (metrics.json, history.jsonl), so it needs no network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from research.reports.plots import plot_bars, plot_curves
from research.reports.runs import load_runs
from research.reports.tables import aggregate, default_metrics, to_markdown


@dataclass
class Report:
    markdown: str
    files: list[Path]


def build_report(source: Path, out_dir: Path, metrics: list[str] | None = None) -> Report:
    """Write report.md, report.csv, runs.csv and PNG plots for the runs under `source`."""
    runs = load_runs(source)
    chosen = metrics or default_metrics(runs)
    table = aggregate(runs, chosen)
    markdown = to_markdown(table, chosen, source=source)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.md").write_text(markdown)
    table.to_csv(out_dir / "report.csv", index=False)
    runs.drop(columns=["history"]).to_csv(out_dir / "runs.csv", index=False)
    files = [out_dir / "report.md", out_dir / "report.csv", out_dir / "runs.csv"]
    files += plot_curves(runs, out_dir)
    files += plot_bars(table, chosen, out_dir)
    return Report(markdown, files)
