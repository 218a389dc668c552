"""Per-variant aggregation over seeds, and its Markdown table with the best variant in bold.

Means and sample standard deviations (ddof=1) use completed runs only; failed and diverged runs
are counted in their own columns, so a variant that often breaks cannot look good by its
survivors alone without the table saying so.
"""

from __future__ import annotations

import math

import pandas as pd

from research.reports.runs import STATUSES, order_variants

_ARROWS = {"max": " ↑", "min": " ↓", None: ""}
_NONE = "–"


def summarize(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """One row per variant ("default" first): n (completed runs), failed, diverged, and per
    metric `<metric> mean`, `<metric> std` and `<metric> n` (completed runs with a value)."""
    variants = order_variants(runs["variant"])
    counts = pd.crosstab(runs["variant"], runs["status"])
    counts = counts.reindex(index=variants, columns=list(STATUSES), fill_value=0)
    table = pd.DataFrame(
        {"n": counts["completed"], "failed": counts["failed"], "diverged": counts["diverged"]}
    )
    done = runs[runs["status"] == "completed"].groupby("variant")
    for metric in metrics:
        table[f"{metric} mean"] = done[metric].mean().astype(float)
        table[f"{metric} std"] = done[metric].std(ddof=1).astype(float)
        table[f"{metric} n"] = done[metric].count().reindex(variants, fill_value=0)
    table.index.name = "variant"
    return table


def _decimals(mean: float, std: float) -> int:
    """Two significant digits of the std, the mean to the same place; four of the mean when
    there is no spread to go by."""
    if math.isfinite(std) and std > 0:
        places = 1 - math.floor(math.log10(std))
    elif math.isfinite(mean) and mean != 0:
        places = 3 - math.floor(math.log10(abs(mean)))
    else:
        places = 4
    return min(max(places, 0), 8)


def format_mean_std(mean: float, std: float) -> str:
    """`0.971 ± 0.012`; `0.9712 ± –` when a single run gives no std; `–` with no value."""
    if math.isnan(mean):
        return _NONE
    places = _decimals(mean, std)
    spread = f"{std:.{places}f}" if not math.isnan(std) else _NONE
    return f"{mean:.{places}f} ± {spread}"


def best_variants(table: pd.DataFrame, metric: str, direction: str | None) -> set[str]:
    """The variants whose mean is the best (ties all win); none when the direction is unknown
    or fewer than two variants have a value."""
    means = table[f"{metric} mean"].dropna()
    if direction is None or len(means) < 2:
        return set()
    target = means.max() if direction == "max" else means.min()
    return set(means.index[means == target])


def to_markdown(table: pd.DataFrame, metrics: list[str], directions: dict[str, str | None]) -> str:
    """A GitHub-flavoured table of `summarize`'s output, with a legend under it."""
    header = ["variant", "n", "failed", "diverged", *(m + _ARROWS[directions[m]] for m in metrics)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * 4 + "---:|" * len(metrics)]
    best = {m: best_variants(table, m, directions[m]) for m in metrics}
    for variant, row in table.astype(object).iterrows():  # object: counts stay ints
        cells = [
            str(variant).replace("|", "\\|"),
            *(str(row[c]) for c in ("n", "failed", "diverged")),
        ]
        for metric in metrics:
            text = format_mean_std(row[f"{metric} mean"], row[f"{metric} std"])
            if 0 < row[f"{metric} n"] < row["n"]:
                text += f" (n={row[f'{metric} n']})"
            cells.append(f"**{text}**" if variant in best[metric] else text)
        lines.append("| " + " | ".join(cells) + " |")
    legend = [
        "",
        f"mean ± sample std (ddof=1) over each variant's completed runs; n = completed runs; "
        f"{_NONE} = no value (a std needs n ≥ 2); **bold** = best mean per metric "
        "(↑ higher is better, ↓ lower is better).",
    ]
    unknown = [m for m in metrics if directions[m] is None]
    if unknown:
        legend.append(
            f"No bold for {', '.join(unknown)}: which way is better is unknown "
            "(give it with --direction METRIC=max|min, or build_report(direction=...))."
        )
    return "\n".join(lines + legend) + "\n"
