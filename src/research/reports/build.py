"""Writing a report folder: report.md, report.csv (per variant), runs.csv (per run) and PNGs.

report.md holds the per-variant table (mean ± std [CI]), the comparison against the baseline
variant, and for a factorial ablation the main effect of each axis.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from research.reports.baseline import choose_baseline, comparison_markdown, comparisons
from research.reports.effects import effects_markdown
from research.reports.errors import RunsWarning
from research.reports.metrics import default_metrics, directions, resolve_metric
from research.reports.plots import (
    check_band,
    curve_metrics,
    plot_curves,
    plot_points,
    save_figure,
)
from research.reports.runs import STATUSES, load_histories, load_runs, order_variants
from research.reports.stats import Comparison
from research.reports.tables import summarize, to_markdown
from research.tracking.run_dir import GRAD_NORM_FILE

# Drawn per step when runs logged gradient norms (callbacks=grad_norm); diverged runs included,
# since their gradients are what explains them.
GRAD_NORM_TOTAL = "grad_norm/total"


@dataclass
class Report:
    """What `build_report` read and wrote."""

    source: Path
    out_dir: Path
    metrics: list[str]
    runs: pd.DataFrame  # one row per run (runs.csv)
    table: pd.DataFrame  # one row per variant (report.csv)
    markdown: str  # the tables with their legends
    files: list[Path]
    warnings: list[str]
    baseline: str | None = None
    comparisons: dict[str, list[Comparison]] = field(default_factory=dict)

    @property
    def usable(self) -> int:
        """Completed runs with a value in at least one of the table's metrics: with none, the
        report has nothing to compare (every run failed, diverged or could not be read)."""
        done = self.runs.loc[self.runs["status"] == "completed", self.metrics]
        return int(done.notna().any(axis=1).sum())


def _slug(metric: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", metric)


def _load(
    source: Path, where: list[str] | None, names: dict[str, str] | None
) -> tuple[pd.DataFrame, list[str]]:
    """The runs, and the warnings about runs that are counted but could not be read or that
    were split from their variant."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RunsWarning)
        runs = load_runs(source, where, names)
    notes = []
    for item in caught:
        if issubclass(item.category, RunsWarning):
            notes.append(str(item.message))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    return runs, notes


def _not_completed(runs: pd.DataFrame, source: Path) -> list[str]:
    bad = runs[runs["status"] != "completed"]
    if bad.empty:
        return []
    lines = ["## Runs not completed", "", "| run dir | variant | seed | status | error |"]
    lines.append("|---|---|---|---|---|")
    for run in bad.to_dict("records"):
        where = Path(run["run_dir"])
        where = where.relative_to(source) if where.is_relative_to(source) else where
        error = run["error"].strip().splitlines() if isinstance(run["error"], str) else []
        cells = [
            str(where),
            run["variant"],
            "–" if pd.isna(run["seed"]) else str(run["seed"]),
            run["status"],
            error[0][:200] if error else "",
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return [*lines, ""]


def _document(report: Report, plots: list[Path]) -> str:
    counts = report.runs["status"].value_counts()
    shown = [s for s in STATUSES if s not in ("interrupted", "pruned") or counts.get(s, 0)]
    tally = ", ".join(f"{counts.get(s, 0)} {s}" for s in shown)
    lines = [
        f"# Report: {report.source.name}",
        "",
        f"Source: `{report.source}`: {len(report.runs)} runs ({tally}).",
        "",
        report.markdown,
        *_not_completed(report.runs, report.source),
    ]
    if report.warnings:
        lines += ["## Warnings", "", *(f"- {w}" for w in report.warnings), ""]
    if plots:
        lines += ["## Plots", "", *(f"![{p.stem}]({p.name})" for p in plots), ""]
    return "\n".join(lines)


def analyse(
    source: Path,
    metrics: list[str] | None = None,
    *,
    direction: dict[str, str] | None = None,
    where: list[str] | None = None,
    baseline: str | None = None,
    ablation: dict[str, Any] | None = None,
    names: dict[str, str] | None = None,
    out_dir: Path | None = None,
) -> Report:
    """Read the runs under `source` and compute the tables, writing nothing (the notebook's
    entry: always from the run dirs, never from an earlier report's files).

    `metrics` defaults to every `final.test/*` metric plus `best.<monitor>`; `direction` sets
    which way a metric is better (metric -> 'max'/'min') where its name does not tell; `where`
    keeps runs by config value (["trainer.max_epochs=10"]); `baseline` names the variant the
    others are compared with (default: the `ablation` file's `baseline`, else "default", else
    the first variant); the ablation file's `axes` add a main-effect table; `names` (config
    hash -> variant, from the ablation file) labels each run by the variant that has its config.
    """
    source = Path(source).resolve()
    runs, notes = _load(source, where, names)
    chosen = [resolve_metric(runs, m) for m in metrics] if metrics else default_metrics(runs)
    chosen = list(dict.fromkeys(chosen))
    ways = directions(runs, chosen, direction)
    table = summarize(runs, chosen)
    spec = ablation or {}
    variants = order_variants(runs["variant"])
    base = choose_baseline(variants, baseline, spec.get("baseline"))
    found = comparisons(runs, chosen, ways, base, variants) if base else {}
    markdown = to_markdown(table, chosen, ways, found, base)
    if base:
        markdown += "\n" + comparison_markdown(found, base)
    if spec.get("axes"):
        axes = {str(a): [str(level) for level in levels] for a, levels in spec["axes"].items()}
        markdown += "\n" + effects_markdown(table, chosen, axes)
    out = Path(out_dir) if out_dir else source / "report"
    return Report(source, out, chosen, runs, table, markdown, [], notes, base, found)


def build_report(
    source: Path,
    out_dir: Path,
    metrics: list[str] | None = None,
    *,
    band: str = "std",
    x: str = "epoch",
    **options: Any,
) -> Report:
    """`analyse` the runs under `source` and write the report into `out_dir`; `band` is the
    curves' shaded band ('std' or 'minmax') and `x` their axis ('epoch' or 'step'); `options`
    are `analyse`'s (direction, where, baseline, ablation, names)."""
    check_band(band)
    report = analyse(source, metrics, out_dir=out_dir, **options)
    out_dir, runs, table, chosen = report.out_dir, report.runs, report.table, report.metrics
    out_dir.mkdir(parents=True, exist_ok=True)
    runs.to_csv(out_dir / "runs.csv", index=False)
    table.to_csv(out_dir / "report.csv")
    histories = load_histories(runs)
    plots = [
        save_figure(plot_curves(histories, m, x, band), out_dir / f"curve_{_slug(m)}.png")
        for m in curve_metrics(chosen, histories)
    ]
    grad_norms = load_histories(runs, ("completed", "diverged"), GRAD_NORM_FILE)
    if GRAD_NORM_TOTAL in grad_norms.columns:
        figure = plot_curves(grad_norms, GRAD_NORM_TOTAL, "step", band)
        figure.axes[0].set_yscale("log")  # a diverging run's norm leaves the others' scale
        plots.append(save_figure(figure, out_dir / f"curve_{_slug(GRAD_NORM_TOTAL)}.png"))
    plots += [
        save_figure(plot_points(runs, table, m), out_dir / f"points_{_slug(m)}.png")
        for m in chosen
        if table[f"{m} n"].sum() > 0
    ]
    (out_dir / "report.md").write_text(_document(report, plots))
    report.files = [out_dir / name for name in ("report.md", "report.csv", "runs.csv")] + plots
    return report
