"""Confidence intervals and comparisons against a baseline variant, over seeds.

Why scipy.stats.bootstrap and not rliable: rliable's stratified bootstrap and IQM aggregate many
tasks (e.g. 57 Atari games) into one score; a report here has one task per table and a few
seeds per variant, so the quantity to bound is each variant's mean over its seeds, which is what
scipy's bootstrap does with no further dependency. The percentile method is used: it is defined
for any n >= 2 and its interval stays inside the range of the resampled means, so a loss's CI
never goes below 0 and an accuracy's never above 1. With 3 seeds it is close to the min-max of
the seeds and covers less than 95%: a variant counts as better than the baseline only when the
CI of the difference excludes 0 AND the Holm-adjusted t-test p-value is below `ALPHA`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 0.05
RESAMPLES = 9999
_SEED = 0  # a fixed bootstrap stream: the same runs always give the same table


@dataclass(frozen=True)
class Comparison:
    """One variant against the baseline on one metric: variant mean minus baseline mean."""

    variant: str
    metric: str
    diff: float
    low: float
    high: float
    p: float
    p_holm: float
    paired: bool
    n: int  # pairs when paired, else the smaller of the two sample sizes
    verdict: str  # "better", "worse" or "noise" (or "unknown" without a direction)


def _bootstrap(
    samples: tuple[np.ndarray, ...], statistic, paired: bool = False
) -> tuple[float, float]:
    result = stats.bootstrap(
        samples,
        statistic,
        paired=paired,
        vectorized=True,
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(_SEED),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def mean_ci(values: np.ndarray | list[float]) -> tuple[float, float]:
    """The bootstrap CI of the mean; (nan, nan) with fewer than two values."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return math.nan, math.nan
    if np.ptp(x) == 0:
        return float(x[0]), float(x[0])
    return _bootstrap((x,), _mean)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment (family-wise error); NaN p-values stay NaN, not counted."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    adjusted = [math.nan] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p))
        adjusted[i] = running
    return adjusted


def _seed_values(runs: pd.DataFrame, variant: str, metric: str) -> pd.Series:
    """The metric per seed over the variant's completed runs (seedless runs get their own key)."""
    done = runs[(runs["variant"] == variant) & (runs["status"] == "completed")]
    done = done[done[metric].notna()]
    keys = [f"s{s}" if not pd.isna(s) else f"run{i}" for i, s in enumerate(done["seed"])]
    return pd.Series(done[metric].to_numpy(float), index=keys)


def _difference(base: pd.Series, other: pd.Series) -> tuple[float, float, float, float, bool, int]:
    """(diff, low, high, p, paired, n): paired by seed when both have the same seeds, each
    once (two runs of one seed in a variant leave no one-to-one pairing)."""
    unique = base.index.is_unique and other.index.is_unique
    paired = len(base) >= 2 and unique and set(base.index) == set(other.index)
    if paired:
        d = (other - base.reindex(other.index)).to_numpy()
        diff, n = float(d.mean()), len(d)
        if np.ptp(d) == 0:
            return diff, diff, diff, (1.0 if diff == 0 else 0.0), True, n
        low, high = _bootstrap((d,), _mean)
        return (
            diff,
            low,
            high,
            float(stats.ttest_rel(other.reindex(base.index), base).pvalue),
            True,
            n,
        )
    x, y = other.to_numpy(), base.to_numpy()
    diff, n = float(x.mean() - y.mean()) if len(x) and len(y) else math.nan, min(len(x), len(y))
    if n < 2:
        return diff, math.nan, math.nan, math.nan, False, n
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return diff, diff, diff, (1.0 if diff == 0 else 0.0), False, n
    low, high = _bootstrap((x, y), _mean_diff)
    p = float(stats.ttest_ind(x, y, equal_var=False).pvalue)
    return diff, low, high, p, False, n


def _verdict(c: tuple[float, float, float], p_holm: float, direction: str | None) -> str:
    diff, low, high = c
    if direction is None:
        return "unknown"
    if math.isnan(low) or math.isnan(p_holm) or p_holm >= ALPHA or low <= 0 <= high:
        return "noise"
    up = diff > 0
    return "better" if up == (direction == "max") else "worse"


def compare(
    runs: pd.DataFrame, metric: str, baseline: str, direction: str | None, variants: list[str]
) -> list[Comparison]:
    """Every variant in `variants` but the baseline against it on `metric`; p-values are
    Holm-adjusted across these comparisons (one family per metric)."""
    base = _seed_values(runs, baseline, metric)
    raw = [(v, _difference(base, _seed_values(runs, v, metric))) for v in variants if v != baseline]
    adjusted = holm([r[3] for _, r in raw])
    return [
        Comparison(
            v,
            metric,
            r[0],
            r[1],
            r[2],
            r[3],
            p_holm,
            r[4],
            r[5],
            _verdict(r[:3], p_holm, direction),
        )
        for (v, r), p_holm in zip(raw, adjusted, strict=True)
    ]
