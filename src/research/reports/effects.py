"""Main effects of a factorial ablation (`axes:` in the ablation file): per axis and level, the
mean over the variants at that level, each variant weighing the same (the other axes averaged
out), next to the per-variant table, with the interval of each level's difference to the axis's
first level.

Variant names are the axes' levels joined with `+` in the file's axis order, as
`research-ablate` names them (`momentum+raw`).
"""

from __future__ import annotations

import math

import pandas as pd

from research.reports.stats import CONFIDENCE, linear_t
from research.reports.tables import decimals, signed


def _difference(level: pd.DataFrame, first: pd.DataFrame, metric: str) -> tuple[float, float]:
    """The Welch-Satterthwaite interval of (mean of `level`'s cell means) - (mean of `first`'s),
    the cells' runs taken as independent (seeds shared across cells would narrow it: this is
    the conservative side); NaN where a cell has fewer than two runs or it is the first level."""
    if level.index.equals(first.index) or level.empty or first.empty:
        return math.nan, math.nan
    weights = [1 / len(level)] * len(level) + [-1 / len(first)] * len(first)
    cells = pd.concat([level, first])
    found = linear_t(
        weights, cells[f"{metric} mean"], cells[f"{metric} std"] ** 2, cells[f"{metric} n"]
    )
    return float(found.low), float(found.high)


def main_effects(table: pd.DataFrame, metric: str, axes: dict[str, list[str]]) -> pd.DataFrame:
    """One row per (axis, level): `mean` (of the variant means at that level), `diff` to the
    axis's first level with its interval `low` / `high`, `variants` (how many had a value) and
    `runs` (completed runs with a value)."""
    names = list(axes)
    rows = []
    for position, axis in enumerate(names):
        first = None
        for level in axes[axis]:
            cells = [
                v
                for v in table.index
                if len(parts := str(v).split("+")) == len(names) and parts[position] == level
            ]
            valued = table.loc[cells][table.loc[cells, f"{metric} mean"].notna()]
            mean = float(valued[f"{metric} mean"].mean()) if len(valued) else math.nan
            first = (mean, valued) if first is None else first
            low, high = _difference(valued, first[1], metric)
            rows.append(
                {
                    "axis": axis,
                    "level": level,
                    "mean": mean,
                    "diff": mean - first[0],
                    "low": low,
                    "high": high,
                    "variants": len(valued),
                    "runs": int(table.loc[cells, f"{metric} n"].sum()),
                }
            )
    return pd.DataFrame(rows)


def effects_markdown(table: pd.DataFrame, metrics: list[str], axes: dict[str, list[str]]) -> str:
    """A Markdown table per metric: every axis level's main effect."""
    lines = ["## Main effects", ""]
    for metric in metrics:
        effects = main_effects(table, metric, axes)
        spread = table[f"{metric} std"].median()
        places = decimals(effects["mean"].median(), spread if pd.notna(spread) else math.nan)
        lines += [
            f"**{metric}**: each level's mean over the variants at that level (the other axes "
            "averaged out, each variant weighing the same); Δ = difference to the axis's first "
            f"level [{CONFIDENCE:.0%} Welch–Satterthwaite t-interval, the cells' runs taken as "
            "independent] (n = runs at the level).",
            "",
            "| axis | level | mean | Δ | n | variants |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for row in effects.to_dict("records"):
            mean = "–" if math.isnan(row["mean"]) else f"{row['mean']:.{places}f}"
            diff = "–" if math.isnan(row["diff"]) else signed(row["diff"], places)
            if not (math.isnan(row["low"]) or math.isnan(row["high"])):
                diff += f" [{signed(row['low'], places)}, {signed(row['high'], places)}]"
            lines.append(
                f"| {row['axis']} | {row['level']} | {mean} | {diff} | {row['runs']} | "
                f"{row['variants']} |"
            )
        lines.append("")
    return "\n".join(lines)
