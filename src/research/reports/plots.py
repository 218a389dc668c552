"""Learning curves (mean over seeds with a band) and per-seed point plots of a metric per
variant (the seeds over the mean and its t-interval; no bars, which would start at 0 and hide a
difference of 0.3% at 0.99).

Figures are plain `matplotlib.figure.Figure`s, drawn by the Agg renderer when saved: no pyplot
state, no display, and a notebook shows the returned figure as it is. Variants get short labels
(overrides shared by all dropped, floats to 3 significant digits), distinct colours up to any
number of variants, and legends outside the axes.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from research.reports.errors import ReportError
from research.reports.runs import order_variants
from research.reports.stats import CONFIDENCE

BANDS = {"std": "±1 std", "minmax": "min–max"}
_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?|(?<![\w.])-?\d+e-?\d+", re.IGNORECASE)
_LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": "small"}


def _short_number(match: re.Match[str]) -> str:
    return f"{float(match.group()):.3g}"


def short_labels(variants: list[str]) -> dict[str, str]:
    """variant -> a label without the overrides every variant shares, floats to 3 significant
    digits (`optimizer.lr=0.0001234567890123` -> `optimizer.lr=0.000123`)."""
    parts = {v: v.split(",") for v in variants}
    shared = set.intersection(*(set(p) for p in parts.values())) if len(variants) > 1 else set()
    labels = {}
    for variant, items in parts.items():
        kept = ",".join(p for p in items if p not in shared) or variant
        labels[variant] = _FLOAT.sub(_short_number, kept)
    return labels


def variant_colors(variants: list[str]) -> dict[str, tuple[float, ...]]:
    """A distinct colour per variant: tab10 up to 10, tab20 up to 20, then evenly spaced hues."""
    n = len(variants)
    if n <= 10:
        colors = [colormaps["tab10"](i) for i in range(n)]
    elif n <= 20:
        colors = [colormaps["tab20"](i) for i in range(n)]
    else:
        colors = [colormaps["turbo"](x) for x in np.linspace(0.05, 0.95, n)]
    return dict(zip(variants, colors, strict=True))


def check_band(band: str) -> None:
    if band not in BANDS:
        raise ReportError(f"band={band!r} is not valid; choose one of: {', '.join(BANDS)}")


def curve_metrics(metrics: list[str], histories: pd.DataFrame) -> list[str]:
    """The logged epoch metrics behind a table's metrics (a `test/x` is drawn as its `val/x`),
    then train and val loss; only those the histories hold."""
    wanted = []
    for metric in metrics:
        name = metric.split(".", 1)[-1]
        wanted.append("val/" + name.removeprefix("test/") if name.startswith("test/") else name)
    wanted += ["train/loss", "val/loss"]
    return [m for m in dict.fromkeys(wanted) if m in histories.columns]


def curve_stats(
    histories: pd.DataFrame, metric: str, x: str = "epoch", band: str = "std"
) -> pd.DataFrame:
    """Per variant and x: the mean over runs, the band's lower and upper edge, and n."""
    check_band(band)
    for column in (x, metric):
        if column not in histories.columns:
            raise ReportError(
                f"the histories have no {column!r}; logged: {', '.join(map(str, histories))}"
            )
    stats = histories.groupby(["variant", x])[metric].agg(["mean", "std", "min", "max", "count"])
    stats = stats[stats["count"] > 0]
    if band == "std":
        lower, upper = stats["mean"] - stats["std"], stats["mean"] + stats["std"]
    else:
        lower, upper = stats["min"], stats["max"]
    frame = pd.DataFrame(
        {
            "mean": stats["mean"],
            "lower": lower,
            "upper": upper,
            "n": stats["count"],
            "min": stats["min"],
            "max": stats["max"],
        }
    )
    return frame.reset_index()


def plot_curves(
    histories: pd.DataFrame, metric: str, x: str = "epoch", band: str = "std"
) -> Figure:
    """One line per variant: the mean over its runs; the band where two or more runs logged.
    Where a variant's runs have different lengths, the number of runs behind the mean is
    written at each point where it changes (`n=2`)."""
    stats = curve_stats(histories, metric, x, band)
    runs_per_variant = histories.groupby("variant")["run_dir"].nunique()
    variants = order_variants(stats["variant"])
    labels, colors = short_labels(variants), variant_colors(variants)
    fig = Figure(figsize=(7.5, 4.0), layout="constrained")
    ax = fig.add_subplot()
    for variant in variants:
        points = stats[stats["variant"] == variant]
        ax.plot(
            points[x],
            points["mean"],
            marker=".",
            color=colors[variant],
            label=f"{labels[variant]} (n={runs_per_variant[variant]})",
        )
        spread = points[points["n"] > 1]
        # Drawn inside the runs' own range: a ±std band would put a loss below 0 or an
        # accuracy above 1.
        ax.fill_between(
            spread[x],
            spread["lower"].clip(lower=spread["min"]),
            spread["upper"].clip(upper=spread["max"]),
            color=colors[variant],
            alpha=0.2,
        )
        changes = points[points["n"] != points["n"].shift()]
        if points["n"].nunique() > 1:
            for _, point in changes.iterrows():
                ax.annotate(
                    f"n={int(point['n'])}",
                    (point[x], point["mean"]),
                    textcoords="offset points",
                    xytext=(0, 6),
                    fontsize="x-small",
                    color=colors[variant],
                )
    ax.set(xlabel=x, ylabel=metric, title=f"{metric}: mean over seeds, band = {BANDS[band]}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(**_LEGEND)
    return fig


def plot_points(runs: pd.DataFrame, table: pd.DataFrame, metric: str) -> Figure:
    """Per variant of `summarize`'s table: each completed run's value as a dot (spread
    sideways), over the mean (a bar-free marker) with its Student-t interval; n beside each
    label. The y axis fits the data, not 0."""
    variants = list(table.index)
    labels, colors = short_labels(variants), variant_colors(variants)
    done = runs[(runs["status"] == "completed") & runs[metric].notna()]
    fig = Figure(figsize=(max(4.0, 1.5 + 0.7 * len(table)), 4.0), layout="constrained")
    ax = fig.add_subplot()
    for i, variant in enumerate(variants):
        values = done.loc[done["variant"] == variant, metric].to_numpy(float)
        offsets = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else np.zeros(1)
        ax.scatter(i + offsets[: len(values)], values, s=14, color=colors[variant], alpha=0.7)
        row = table.loc[variant]
        low, high, mean = row[f"{metric} ci_low"], row[f"{metric} ci_high"], row[f"{metric} mean"]
        error = [[mean - low], [high - mean]] if np.isfinite([low, high]).all() else None
        ax.errorbar(i + 0.3, mean, yerr=error, fmt="D", color="black", ms=4, capsize=3)
    ax.set_xticks(
        range(len(variants)),
        [f"{labels[v]} (n={table.loc[v, f'{metric} n']})" for v in variants],
        rotation=30,
        ha="right",
        fontsize="small",
    )
    ax.set(
        ylabel=metric,
        title=f"{metric}\ndots = seeds; ◆ = mean, {CONFIDENCE:.0%} Student-t interval (n below)",
    )
    ax.grid(axis="y", alpha=0.3)
    return fig


def save_figure(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=120)
    return path
