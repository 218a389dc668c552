"""Per-variant aggregation over seeds, and its Markdown table.

Means, sample standard deviations (ddof=1) and Student-t intervals of the mean
(`research.reports.stats`, which says why t) use completed runs only;
failed and diverged runs (and interrupted ones, when there are any) are counted in their own
columns, so a variant that often breaks cannot look good by its survivors alone without the table
saying so. A cell is bold only when the
variant beats the baseline beyond noise (`research.reports.stats`), never for the best mean
alone: with a few seeds the best mean is often a tie within noise.
"""

from __future__ import annotations

import math

import pandas as pd

from research.reports.metrics import is_share
from research.reports.runs import STATUSES, order_variants
from research.reports.stats import CONFIDENCE, Comparison, mean_interval

_ARROWS = {"max": " ↑", "min": " ↓", None: ""}
_NONE = "–"


def summarize(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """One row per variant ("default" first): n (completed runs), failed, diverged (interrupted
    too when a run was), and per
    metric `<metric> mean`, `<metric> std`, `<metric> n` (completed runs with a value) and the
    Student-t interval of the mean, `<metric> ci_low` / `<metric> ci_high`."""
    variants = order_variants(runs["variant"])
    counts = pd.crosstab(runs["variant"], runs["status"])
    counts = counts.reindex(index=variants, columns=list(STATUSES), fill_value=0)
    table = pd.DataFrame(
        {"n": counts["completed"], "failed": counts["failed"], "diverged": counts["diverged"]}
    )
    if counts["interrupted"].any():
        table["interrupted"] = counts["interrupted"]
    done = runs[runs["status"] == "completed"].groupby("variant")
    for metric in metrics:
        table[f"{metric} mean"] = done[metric].mean().astype(float)
        table[f"{metric} std"] = done[metric].std(ddof=1).astype(float)
        table[f"{metric} n"] = done[metric].count().reindex(variants, fill_value=0)
        cis = {v: mean_interval(x.dropna().to_numpy()) for v, x in done[metric]}
        low = pd.Series({v: c.low for v, c in cis.items()}, dtype=float)
        high = pd.Series({v: c.high for v, c in cis.items()}, dtype=float)
        if is_share(metric, runs[metric]):  # the mean of a share lies in [0, 1]
            low, high = low.clip(lower=0.0), high.clip(upper=1.0)
        table[f"{metric} ci_low"], table[f"{metric} ci_high"] = low, high
    table.index.name = "variant"
    return table


def decimals(mean: float, std: float) -> int:
    """Two significant digits of the std, the mean to the same place; four of the mean when
    there is no spread to go by."""
    if math.isfinite(std) and std > 0:
        places = 1 - math.floor(math.log10(std))
    elif math.isfinite(mean) and mean != 0:
        places = 3 - math.floor(math.log10(abs(mean)))
    else:
        places = 4
    return min(max(places, 0), 8)


def format_mean_std(
    mean: float,
    std: float,
    low: float = math.nan,
    high: float = math.nan,
    n: int | None = None,
) -> str:
    """`0.971 ± 0.012 [0.960, 0.980] (n=5)` (with an interval and its n); `0.9712 ± –` when
    a single run gives no std; `–` with no value."""
    if math.isnan(mean):
        return _NONE
    places = decimals(mean, std)
    spread = f"{std:.{places}f}" if not math.isnan(std) else _NONE
    text = f"{number(mean, places)} ± {spread}"
    if not (math.isnan(low) or math.isnan(high)):
        text += f" [{number(low, places)}, {number(high, places)}]"
    return text if n is None else f"{text} (n={n})"


def number(value: float, places: int) -> str:
    """`0.012` / `−0.004` (a true minus sign, as in a typeset table)."""
    return f"{value:.{places}f}".replace("-", "−")


def signed(value: float, places: int) -> str:
    """`+0.012` / `−0.004` (a true minus sign, as in a typeset table)."""
    return f"{value:+.{places}f}".replace("-", "−")


def better_variants(comparisons: list[Comparison]) -> set[str]:
    """The variants better than the baseline beyond noise."""
    return {c.variant for c in comparisons if c.verdict == "better"}


def _at_a_bound(table: pd.DataFrame, metric: str) -> bool:
    """Whether an interval of `metric` reaches 0 or 1: `summarize` cut it there."""
    return bool(((table[f"{metric} ci_low"] <= 0) | (table[f"{metric} ci_high"] >= 1)).any())


def to_markdown(
    table: pd.DataFrame,
    metrics: list[str],
    directions: dict[str, str | None],
    comparisons: dict[str, list[Comparison]] | None = None,
    baseline: str | None = None,
    shares: list[str] | None = None,
) -> str:
    """A GitHub-flavoured table of `summarize`'s output, with a legend under it; a cell is bold
    when `comparisons` (metric -> comparisons against `baseline`) say it is better. `shares`:
    the metrics whose intervals `summarize` cuts to [0, 1] (`is_share`); the legend names those
    it cut."""
    counted = [c for c in ("n", "failed", "diverged", "interrupted") if c in table.columns]
    header = ["variant", *counted, *(m + _ARROWS[directions[m]] for m in metrics)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * (1 + len(counted)) + "---:|" * len(metrics),
    ]
    best = {m: better_variants((comparisons or {}).get(m, [])) for m in metrics}
    for variant, row in table.astype(object).iterrows():  # object: counts stay ints
        name = str(variant).replace("|", "\\|")
        cells = [
            f"{name} (baseline)" if variant == baseline else name,
            *(str(row[c]) for c in counted),
        ]
        for metric in metrics:
            text = format_mean_std(
                *(row[f"{metric} {part}"] for part in ("mean", "std", "ci_low", "ci_high")),
                n=row[f"{metric} n"],
            )
            cells.append(f"**{text}**" if variant in best[metric] else text)
        lines.append("| " + " | ".join(cells) + " |")
    legend = [
        "",
        f"mean ± sample std (ddof=1) [{CONFIDENCE:.0%} Student-t interval of the mean] (n = "
        f"completed runs with a value) over each variant's completed runs; {_NONE} = no value "
        "(a std and an interval need n ≥ 2 values that differ); **bold** = better than the "
        "baseline beyond noise (the table below) (↑ higher is better, ↓ lower is better).",
    ]
    cut = [m for m in shares or () if _at_a_bound(table, m)]
    if cut:
        legend.append(
            f"The intervals of {', '.join(cut)}, shares whose mean lies in [0, 1], are cut "
            "to that range."
        )
    unknown = [m for m in metrics if directions[m] is None]
    if unknown:
        legend.append(
            f"No bold for {', '.join(unknown)}: which way is better is unknown "
            "(give it with --direction METRIC=max|min, or build_report(direction=...))."
        )
    return "\n".join(lines + legend) + "\n"
