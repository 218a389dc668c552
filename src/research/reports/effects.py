"""Main effects of a factorial ablation (`axes:` in the ablation file): per axis and level, the
mean over the variants at that level, each variant weighing the same (the other axes averaged
out), next to the per-variant table.

Variant names are the axes' levels joined with `+` in the file's axis order, as
`research-ablate` names them (`momentum+raw`).
"""

from __future__ import annotations

import math

import pandas as pd

from research.reports.tables import decimals, signed


def main_effects(table: pd.DataFrame, metric: str, axes: dict[str, list[str]]) -> pd.DataFrame:
    """One row per (axis, level): `mean` (of the variant means at that level), `diff` to the
    axis's first level, `variants` (how many had a value) and `runs` (completed runs)."""
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
            means = table.loc[cells, f"{metric} mean"].dropna()
            mean = float(means.mean()) if len(means) else math.nan
            first = mean if first is None else first
            rows.append(
                {
                    "axis": axis,
                    "level": level,
                    "mean": mean,
                    "diff": mean - first,
                    "variants": len(means),
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
            "level.",
            "",
            "| axis | level | mean | Δ | variants | runs |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for row in effects.to_dict("records"):
            mean = "–" if math.isnan(row["mean"]) else f"{row['mean']:.{places}f}"
            diff = "–" if math.isnan(row["diff"]) else signed(row["diff"], places)
            lines.append(
                f"| {row['axis']} | {row['level']} | {mean} | {diff} | {row['variants']} | "
                f"{row['runs']} |"
            )
        lines.append("")
    return "\n".join(lines)
