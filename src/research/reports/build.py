"""Writing a report folder: report.md, report.csv (per variant), runs.csv (per run), PNGs,
provenance.json (where each cell comes from) and, on request, the paper tables (`export`).

report.md holds the per-variant table (mean ± std [CI]), the comparison against the baseline
variant, and for a factorial ablation the main effect of each axis. Every path a report writes
is relative to the folder of runs it describes: a report is read on other machines than the one
that made it (a committed study's report outlives its run dirs).
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from research.reports import export
from research.reports.baseline import choose_baseline, comparison_markdown, comparisons
from research.reports.decisions import decisions_markdown
from research.reports.effects import effects_markdown
from research.reports.errors import ReportError, RunsWarning
from research.reports.metrics import default_metrics, directions, is_share, resolve_metric
from research.reports.pareto import pareto_markdown
from research.reports.per_query import per_query_markdown
from research.reports.plots import (
    check_band,
    curve_metrics,
    plot_curves,
    plot_points,
    save_figure,
)
from research.reports.provenance import provenance
from research.reports.recorded import MISSING, PROVENANCE_FILE, Recorded
from research.reports.report import Report
from research.reports.runs import (
    STATUSES,
    load_histories,
    load_runs,
    order_variants,
    relative_run_dirs,
    run_configs,
)
from research.reports.stats import METHOD
from research.reports.tables import summarize, to_markdown
from research.tracking.run_dir import GRAD_NORM_FILE
from research.utils.atomic import replacing, write_atomic

# Drawn per step when runs logged gradient norms (callbacks=grad_norm); diverged runs included,
# since their gradients are what explains them.
GRAD_NORM_TOTAL = "grad_norm/total"


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


def _relative(text: str, source: Path) -> str:
    """A warning with the run dirs under `source` named relative to it (stderr keeps the full
    paths; the report's files name no machine's paths)."""
    return text.replace(f"{source}{os.sep}", "")


def _document(report: Report, plots: list[Path]) -> str:
    counts = report.runs["status"].value_counts()
    shown = [s for s in STATUSES if s not in ("interrupted", "pruned") or counts.get(s, 0)]
    tally = ", ".join(f"{counts.get(s, 0)} {s}" for s in shown)
    lines = [
        f"# Report: {Path(report.origin).name}",
        "",
        f"Source: `{report.origin}`: {len(report.runs)} runs ({tally}); run dirs are named "
        "relative to it.",
        "",
    ]
    if report.missing:
        lines += [f"This report says less than one made from the run dirs: {report.missing}.", ""]
    lines += [report.markdown, METHOD, "", *_not_completed(report.runs, report.source)]
    if report.warnings:
        notes = [_relative(w, report.source) for w in report.warnings]
        lines += ["## Warnings", "", *(f"- {w}" for w in notes), ""]
    if plots:
        lines += ["## Plots", "", *(f"![{p.stem}]({p.name})" for p in plots), ""]
    return "\n".join(lines)


def _origin(source: Path) -> str:
    """`source` as a report names it: `ablations/<name>` for an ablation's folder, else its path
    under the current directory, else its name; never a path of this machine."""
    if source.parent.name == "ablations":
        return f"ablations/{source.name}"
    cwd = Path.cwd().resolve()
    inside = source != cwd and source.is_relative_to(cwd)
    return source.relative_to(cwd).as_posix() if inside else source.name


def _recorded(
    path: Path, where: list[str] | None, ablation: dict[str, Any] | None
) -> tuple[Recorded, dict[str, Any]]:
    """The runs of a recorded runs.csv and the ablation file of the ablation they came from."""
    from research.reports.recorded import load_recorded
    from research.reports.source import ablation_spec

    if where:
        raise ReportError(
            f"--where cannot filter {path}: a runs.csv holds no configs (its runs were already "
            "filtered when it was written); pass the folder of run dirs instead"
        )
    recorded = load_recorded(path)
    return recorded, ablation if ablation is not None else ablation_spec(recorded.ablation)


def analyse(
    source: Path,
    metrics: list[str] | None = None,
    *,
    direction: dict[str, str] | None = None,
    where: list[str] | None = None,
    baseline: str | None = None,
    ablation: dict[str, Any] | None = None,
    ablation_name: str | None = None,
    names: dict[str, str] | None = None,
    out_dir: Path | None = None,
) -> Report:
    """Read the runs under `source` and compute the tables, writing nothing (the notebook's
    entry: from the run dirs, or from a report's recorded runs.csv when `source` is one).

    `metrics` defaults to every `final.test/*` metric plus `best.<monitor>`; `direction` sets
    which way a metric is better (metric -> 'max'/'min') where its name does not tell; `where`
    keeps runs by config value (["trainer.max_epochs=10"]); `baseline` names the variant the
    others are compared with (default: the `ablation` file's `baseline`, else "default", else
    the first variant); the ablation file's `axes` add a main-effect table; `names` (config
    hash -> variant, from the ablation file) labels each run by the variant that has its config.
    A runs.csv is read with the options its report recorded in provenance.json (the ones given
    here win), and with the ablation file of the ablation its runs came from.
    """
    source = Path(source).resolve()
    earlier: dict[str, Any] = {}
    if source.is_file():
        recorded, ablation = _recorded(source, where, ablation)
        runs, notes, origin, earlier = recorded.runs, [], recorded.origin, recorded.options
        ablation_name = ablation_name or recorded.ablation
        earlier = {"metrics": (ablation or {}).get("metrics"), **earlier}
    else:
        runs, notes = _load(source, where, names)
        origin = _origin(source)
    spec = ablation or {}
    metrics = metrics or earlier.get("metrics")
    chosen = [resolve_metric(runs, m) for m in metrics] if metrics else default_metrics(runs)
    chosen = list(dict.fromkeys(chosen))
    ways = directions(runs, chosen, direction or earlier.get("explicit_directions"))
    table = summarize(runs, chosen)
    variants = order_variants(runs["variant"])
    base = choose_baseline(variants, baseline or earlier.get("baseline"), spec.get("baseline"))
    found = comparisons(runs, chosen, ways, base, variants) if base else {}
    shares = [m for m in chosen if is_share(m, runs[m])]
    markdown = to_markdown(table, chosen, ways, found, base, shares)
    if base:
        markdown += "\n" + comparison_markdown(found, base)
        markdown += per_query_markdown(runs, chosen, ways, base, variants, source)
    axes = earlier.get("axes") or {
        str(a): [str(level) for level in levels] for a, levels in (spec.get("axes") or {}).items()
    }
    if axes:
        markdown += "\n" + effects_markdown(table, chosen, axes)
    markdown += decisions_markdown(source)  # research-ablate --until-decided
    if source.is_dir():
        markdown += pareto_markdown(source)  # a multi-objective search's front
    out = Path(out_dir) if out_dir else (source.parent if source.is_file() else source / "report")
    options = {
        "metrics": chosen,
        "baseline": base,
        "where": list(where or earlier.get("where") or []),
        "explicit_directions": dict(direction or earlier.get("explicit_directions") or {}),
        "axes": axes,
    }
    return Report(
        source,
        out,
        chosen,
        runs,
        table,
        markdown,
        [],
        notes,
        base,
        found,
        ways,
        origin,
        ablation_name,
        options,
        recorded=source.is_file(),
        missing=MISSING if source.is_file() else None,
    )


def _check_folder(out_dir: Path | None) -> None:
    """Refused before the runs are read, so that a wrong --out costs nothing."""
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise ReportError(f"--out {out_dir} is a file; give a folder (made if missing)")


def build_report(
    source: Path,
    out_dir: Path,
    metrics: list[str] | None = None,
    *,
    band: str = "std",
    x: str = "epoch",
    formats: list[str] | tuple[str, ...] = (),
    **options: Any,
) -> Report:
    """`analyse` the runs under `source` and write the report into `out_dir`; `band` is the
    curves' shaded band ('std' or 'minmax') and `x` their axis ('epoch' or 'step'); `formats`
    adds the paper tables (`export.FORMATS`); `options` are `analyse`'s (direction, where,
    baseline, ablation, ablation_name, names)."""
    check_band(band)
    _check_folder(out_dir)
    report = analyse(source, metrics, out_dir=out_dir, **options)
    out_dir, runs, table, chosen = report.out_dir, report.runs, report.table, report.metrics
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ReportError(f"--out {out_dir}: cannot make the folder: {err.strerror}") from None
    shown = runs if report.recorded else relative_run_dirs(runs, report.source)
    # A re-render from runs.csv writes over its own input: replace it whole or not at all.
    with replacing(out_dir / "runs.csv", durable=False) as partial:
        shown.to_csv(partial, index=False)
    table.to_csv(out_dir / "report.csv")
    plots = _curves(report, band, x)
    plots += [
        save_figure(plot_points(runs, table, m), out_dir / f"points_{_slug(m)}.png")
        for m in chosen
        if table[f"{m} n"].sum() > 0
    ]
    configs = {} if report.recorded else run_configs(runs)
    record = json.dumps(provenance(report, shown, configs), indent=2, ensure_ascii=False)
    write_atomic(out_dir / PROVENANCE_FILE, record + "\n", durable=False)
    papers = export.write(report, list(formats), out_dir)
    (out_dir / "report.md").write_text(_document(report, plots))
    written = ("report.md", "report.csv", "runs.csv", PROVENANCE_FILE)
    report.plots = plots
    report.files = [out_dir / name for name in written] + papers + plots
    return report


def _curves(report: Report, band: str, x: str) -> list[Path]:
    """The learning curves (and gradient-norm trace) from the runs' histories; from a recorded
    runs.csv, which has none, the curves already in the folder, as they were drawn."""
    out_dir = report.out_dir
    if report.recorded:
        return sorted(out_dir.glob("curve_*.png"))
    histories = load_histories(report.runs)
    plots = [
        save_figure(plot_curves(histories, m, x, band), out_dir / f"curve_{_slug(m)}.png")
        for m in curve_metrics(report.metrics, histories)
    ]
    grad_norms = load_histories(report.runs, ("completed", "diverged"), GRAD_NORM_FILE)
    if GRAD_NORM_TOTAL in grad_norms.columns:
        figure = plot_curves(grad_norms, GRAD_NORM_TOTAL, "step", band)
        figure.axes[0].set_yscale("log")  # a diverging run's norm leaves the others' scale
        plots.append(save_figure(figure, out_dir / f"curve_{_slug(GRAD_NORM_TOTAL)}.png"))
    return plots
