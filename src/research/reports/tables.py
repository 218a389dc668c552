"""Per-variant aggregation over seeds, and the Markdown table with the best variant in bold."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

_LOWER_IS_BETTER = ("loss", "perplexity", "ppl", "error", "err", "time")


def direction(metric: str, runs: pd.DataFrame | None = None) -> str:
    """'max' or 'min': the runs' own monitor mode for the monitored metric, else by name."""
    name = metric.split(".", 1)[-1]
    if runs is not None and "monitor" in runs and (runs["monitor"] == name).any():
        mode = runs.loc[runs["monitor"] == name, "mode"].dropna()
        if not mode.empty:
            return str(mode.iloc[0])
    return "min" if any(word in name.lower() for word in _LOWER_IS_BETTER) else "max"


def default_metrics(runs: pd.DataFrame) -> list[str]:
    """The monitored metric at the best checkpoint, then every test metric of that checkpoint."""
    chosen = []
    monitors = runs.get("monitor", pd.Series(dtype=object)).dropna().unique()
    chosen += [f"best.{m}" for m in monitors if f"best.{m}" in runs]
    chosen += sorted(c for c in runs.columns if c.startswith("best.test/"))
    return chosen


def aggregate(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Mean, sample std (ddof=1) and n over completed runs per variant; failures counted apart."""
    unknown = [m for m in metrics if m not in runs.columns]
    if unknown:
        available = sorted(c for c in runs.columns if c.startswith(("best.", "final.")))
        raise KeyError(f"unknown metric {unknown[0]}; available: {', '.join(available)}")
    rows = []
    for variant, group in runs.groupby("variant", sort=True):
        done = group[group["status"] == "completed"]
        row: dict[str, object] = {
            "variant": variant,
            "n": len(done),
            "failed": int((group["status"] == "failed").sum()),
            "diverged": int((group["status"] == "diverged").sum()),
        }
        for metric in metrics:
            values = done[metric].dropna()
            row[f"{metric} mean"] = values.mean() if len(values) else math.nan
            row[f"{metric} std"] = values.std(ddof=1) if len(values) > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(mean: float, std: float) -> str:
    if math.isnan(mean):
        return "–"
    return f"{mean:.4f} ± {std:.4f}" if not math.isnan(std) else f"{mean:.4f} ± –"


def to_markdown(table: pd.DataFrame, metrics: list[str], source: Path | None = None) -> str:
    """A GitHub-flavoured table; per metric, the best variant's cell is bold."""
    best = {}
    for metric in metrics:
        means = table[f"{metric} mean"]
        if means.notna().any():
            best[metric] = means.idxmax() if direction(metric) == "max" else means.idxmin()
    header = ["variant", "n", "failed", "diverged", *metrics]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for i, row in table.iterrows():
        cells = [str(row["variant"]), str(row["n"]), str(row["failed"]), str(row["diverged"])]
        for metric in metrics:
            text = _cell(row[f"{metric} mean"], row[f"{metric} std"])
            cells.append(f"**{text}**" if best.get(metric) == i else text)
        lines.append("| " + " | ".join(cells) + " |")
    title = f"Runs under `{source}`: " if source else ""
    note = f"{title}mean ± sample std over completed seeds; n = completed runs."
    return note + "\n\n" + "\n".join(lines) + "\n"
