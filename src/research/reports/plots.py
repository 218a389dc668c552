"""Learning curves with a band over seeds, and a bar chart of final metrics with error bars."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def curves(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per variant and epoch: mean and std of `metric` over the completed runs' histories."""
    rows = []
    for _, run in runs[runs["status"] == "completed"].iterrows():
        for point in run["history"]:
            if metric in point:
                rows.append(
                    {"variant": run["variant"], "epoch": point["epoch"], "v": point[metric]}
                )
    if not rows:
        return pd.DataFrame(columns=["variant", "epoch", "mean", "std"])
    frame = pd.DataFrame(rows).groupby(["variant", "epoch"])["v"]
    return frame.agg(mean="mean", std="std").reset_index()


def plot_curves(runs: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One PNG per logged epoch metric among val/loss, val/acc and train/loss."""
    written = []
    for metric in ("val/acc", "val/loss", "train/loss"):
        data = curves(runs, metric)
        if data.empty:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for variant, group in data.groupby("variant"):
            std = group["std"].fillna(0.0)
            ax.plot(group["epoch"], group["mean"], label=str(variant))
            ax.fill_between(group["epoch"], group["mean"] - std, group["mean"] + std, alpha=0.2)
        ax.set(xlabel="epoch", ylabel=metric, title=f"{metric}: mean ± std over seeds")
        ax.legend(fontsize="small")
        path = out_dir / f"curve_{_safe(metric)}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def plot_bars(table: pd.DataFrame, metrics: list[str], out_dir: Path) -> list[Path]:
    """One PNG per metric: the variants' means with sample-std error bars."""
    written = []
    for metric in metrics:
        means = table[f"{metric} mean"]
        if means.isna().all():
            continue
        errors = [0.0 if math.isnan(s) else s for s in table[f"{metric} std"]]
        fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(table)), 4))
        ax.bar(table["variant"].astype(str), means, yerr=errors, capsize=4)
        ax.set(ylabel=metric, title=f"{metric}: mean ± std over seeds")
        ax.tick_params(axis="x", labelrotation=30)
        path = out_dir / f"bar_{_safe(metric)}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
