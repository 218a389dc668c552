"""Run aggregation: many run dirs -> a table per variant (mean ± std and a bootstrap CI over
seeds), comparisons against a baseline variant, main effects of factorial ablations, and plots.

Reads only the files runs leave on disk (metrics.json, history.jsonl), so it needs no network
and never imports torch.
"""

from __future__ import annotations

from research.reports.baseline import choose_baseline, comparison_markdown, comparisons
from research.reports.build import analyse, build_report
from research.reports.effects import effects_markdown
from research.reports.errors import ReportError, RunsWarning
from research.reports.metrics import default_metrics, directions, resolve_metric
from research.reports.plots import curve_metrics, plot_curves, plot_points
from research.reports.report import Report
from research.reports.runs import load_histories, load_runs
from research.reports.tables import format_mean_std, summarize, to_markdown

__all__ = [
    "Report",
    "ReportError",
    "RunsWarning",
    "analyse",
    "build_report",
    "choose_baseline",
    "comparison_markdown",
    "comparisons",
    "curve_metrics",
    "default_metrics",
    "directions",
    "effects_markdown",
    "format_mean_std",
    "load_histories",
    "load_runs",
    "plot_curves",
    "plot_points",
    "resolve_metric",
    "summarize",
    "to_markdown",
]
