"""Learning curves (mean over seeds with a band) and bar charts of a metric per variant.

Figures are plain `matplotlib.figure.Figure`s, drawn by the Agg renderer when saved: no pyplot
state, no display, and a notebook shows the returned figure as it is.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from research.reports.errors import ReportError
from research.reports.runs import order_variants

BANDS = {"std": "±1 std", "minmax": "min–max"}


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
        {"mean": stats["mean"], "lower": lower, "upper": upper, "n": stats["count"]}
    )
    return frame.reset_index()


def plot_curves(
    histories: pd.DataFrame, metric: str, x: str = "epoch", band: str = "std"
) -> Figure:
    """One line per variant: the mean over its runs; the band where two or more runs logged."""
    stats = curve_stats(histories, metric, x, band)
    runs_per_variant = histories.groupby("variant")["run_dir"].nunique()
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.add_subplot()
    for variant in order_variants(stats["variant"]):
        points = stats[stats["variant"] == variant]
        (line,) = ax.plot(
            points[x],
            points["mean"],
            marker=".",
            label=f"{variant} (n={runs_per_variant[variant]})",
        )
        spread = points[points["n"] > 1]
        ax.fill_between(
            spread[x], spread["lower"], spread["upper"], color=line.get_color(), alpha=0.2
        )
    ax.set(xlabel=x, ylabel=metric, title=f"{metric}: mean over seeds, band = {BANDS[band]}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def plot_bars(table: pd.DataFrame, metric: str) -> Figure:
    """A bar per variant of `summarize`'s table: the mean, with ±1 sample-std error bars."""
    means = table[f"{metric} mean"]
    stds = table[f"{metric} std"]  # NaN (a single run) draws no error bar
    labels = [f"{variant}\n(n={n})" for variant, n in table[f"{metric} n"].items()]
    fig = Figure(figsize=(max(4.0, 1.0 + 0.9 * len(table)), 4.0), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(range(len(table)), means, yerr=stds, capsize=4, color="tab:blue", alpha=0.8)
    ax.set_xticks(range(len(table)), labels, rotation=30, ha="right", fontsize="small")
    ax.set(ylabel=metric, title=f"{metric}\nmean over seeds, error bars ±1 std")
    ax.grid(axis="y", alpha=0.3)
    return fig


def save_figure(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=120)
    return path
