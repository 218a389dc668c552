"""Intervals and tests over seeds: each variant's mean, and each variant against a baseline.

Why Student's t and not a bootstrap: a study has 2 to 10 seeds per variant. A percentile
bootstrap interval of a mean is then about the seeds' min-max, narrower than Student's by about
z · sqrt((n-1)/n) / t(n-1) (0.37 at n = 3): it covers the mean about 75% of the time at n = 3,
not 95%; BCa and bootstrap-t need far more values than that to reach their nominal coverage
(Hesterberg, "What teachers should know about the bootstrap", The American Statistician 69(4),
2015). Student's t interval, mean ± t(1 - alpha/2, n - 1) · s / sqrt(n), has exact coverage at every
n >= 2 when a seed's result is normally distributed around its variant's mean (Student, "The
probable error of a mean", Biometrika 6(1), 1908), which is the assumption made here: a final
metric averages many test examples and many training steps. Its price is honesty: at n = 2 the
interval is wide (t = 12.7), and it can reach past a metric's range (an accuracy above 1),
meaning that the seeds cannot place the mean more closely.

Against the baseline: paired by seed where both variants ran the same seeds once each (the
t-interval of the per-seed differences and the paired t-test), else Welch's unpaired interval and
test with the Welch-Satterthwaite degrees of freedom (Welch, Biometrika 34, 1947; Satterthwaite,
Biometrics Bulletin 2(6), 1946). p-values are two-sided and Holm-adjusted across the variants of
a metric (Holm, Scand. J. Statistics 6, 1979). A variant is better or worse beyond noise only
when its Holm-adjusted p < ALPHA and its interval excludes 0; no such claim is made from fewer
than MIN_CLAIM seeds, nor when the differences have no spread (all equal: the t statistic is
a division by zero, not evidence), and the report says so instead.

The core (`t_test`, `beyond_noise`) works element-wise on arrays, so the simulation tests run
the very rule a report uses on thousands of samples at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 0.05
MIN_CLAIM = 3  # fewest pairs (unpaired: runs on each side) a better/worse claim is made from
# Relative to the values compared: spread below this is round-off (metrics are saved from
# float32, ~7 significant digits), and a t statistic over it would be a division by ~0.
_RESOLUTION = 1e-6

METHOD = (
    f"**Intervals and tests.** Each [low, high] is a {CONFIDENCE:.0%} Student-t interval of a "
    "mean over seeds (mean ± t · s/√n), shown with its n; it assumes a seed's result is normally "
    f"distributed around its variant's mean and then covers the true mean {CONFIDENCE:.0%} of the "
    "time at any n ≥ 2 (a percentile bootstrap would be about the seeds' min–max and cover about "
    "75% at n = 3; bootstrap-t and BCa need more seeds than a study has). Against the baseline, "
    "Δ is paired by seed where both variants ran the same seeds (a t-interval of the per-seed "
    "differences and a paired t-test), else unpaired (Welch's interval and test). p is two-sided "
    f"and Holm-adjusted across the variants compared on each metric; a variant is better or worse "
    f"beyond noise only when that p < {ALPHA} and its interval excludes 0. No such claim is made "
    f"from fewer than {MIN_CLAIM} seeds or when the differences are all equal (nothing to test "
    "against): the report says it cannot tell. Intervals are not adjusted for multiplicity."
)


class Interval(NamedTuple):
    """A mean with its interval and the number of values behind it; low/high are NaN where no
    interval exists (n < 2, or no spread)."""

    mean: float
    low: float
    high: float
    n: int


class TTest(NamedTuple):
    """An estimate with its t-interval, two-sided p (H0: the true value is 0) and degrees of
    freedom; arrays in, arrays out, NaN where the data give no interval."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p: np.ndarray
    df: np.ndarray


@dataclass(frozen=True)
class Comparison:
    """One variant against the baseline on one metric: variant mean minus baseline mean."""

    variant: str
    metric: str
    diff: float
    low: float
    high: float
    p: float  # NaN when no test is made (see `note`)
    p_holm: float
    paired: bool
    n: int  # pairs when paired, else the smaller of the two sample sizes
    verdict: str  # "better", "worse", "noise", "undecided" (see note), "unknown" (no direction)
    note: str = ""  # why no claim can be made, e.g. "n=2: too few seeds to tell"


def _t(estimate, variance, df, confidence: float) -> TTest:
    """The t-interval and two-sided p of `estimate`, whose sampling variance is `variance`,
    element-wise; NaN where the variance is 0 or unknown."""
    estimate, variance, df = np.broadcast_arrays(*map(np.asarray, (estimate, variance, df)))
    ok = (variance > 0) & np.isfinite(variance) & (df > 0)
    se = np.sqrt(np.where(ok, variance, 1.0))
    dof = np.where(ok, df, 1.0)
    half = stats.t.ppf((1 + confidence) / 2, dof) * se
    p = 2 * stats.t.sf(np.abs(estimate) / se, dof)
    nan = np.full(estimate.shape, math.nan)
    return TTest(
        estimate,
        np.where(ok, estimate - half, nan),
        np.where(ok, estimate + half, nan),
        np.where(ok, p, nan),
        np.where(ok, df, nan),
    )


def _variance(x: np.ndarray, scale) -> np.ndarray:
    """The sample variance (ddof=1) along the last axis, 0 where the spread is round-off
    relative to `scale`."""
    var = x.var(axis=-1, ddof=1)
    return np.where(np.sqrt(var) > _RESOLUTION * np.asarray(scale), var, 0.0)


def t_test(x, confidence: float = CONFIDENCE, scale=None) -> TTest:
    """Student's one-sample t-interval of the mean and test of mean = 0 along the last axis of
    `x` (finite values, n >= 2). Paired differences are such a sample. `scale` is the size of
    the values the sample came from (default: the largest |x|); spread below a millionth of it
    counts as none, so all-equal values give no interval and no p."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    if n < 2:
        return _t(x.mean(axis=-1) if n else math.nan, math.nan, math.nan, confidence)
    scale = np.abs(x).max(axis=-1) if scale is None else scale
    return _t(x.mean(axis=-1), _variance(x, scale) / n, n - 1, confidence)


def linear_t(weights, means, variances, counts, confidence: float = CONFIDENCE) -> TTest:
    """sum(w_i · mean_i) over independent samples, with the Welch-Satterthwaite degrees of
    freedom (Satterthwaite 1946): the variance is sum(w_i² s_i² / n_i) and
    df = variance² / sum((w_i² s_i² / n_i)² / (n_i - 1)). Welch's difference is weights (1, -1);
    a main effect weighs each cell of a level the same. NaN when a sample has no variance."""
    w, m, v, n = (np.asarray(a, dtype=float) for a in (weights, means, variances, counts))
    terms = w**2 * v / n
    variance = terms.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        df = variance**2 / np.sum(np.where(terms > 0, terms**2 / (n - 1), 0.0))
    return _t(float((w * m).sum()), variance, df, confidence)


def welch_test(x, y, confidence: float = CONFIDENCE) -> TTest:
    """Welch's interval of mean(x) - mean(y) and its unequal-variance t-test (Welch 1947)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if min(len(x), len(y)) < 2:
        return _t(x.mean() - y.mean() if len(x) and len(y) else math.nan, math.nan, 1, confidence)
    scale = max(np.abs(x).max(), np.abs(y).max())
    variances = [_variance(x, scale), _variance(y, scale)]
    return linear_t([1, -1], [x.mean(), y.mean()], variances, [len(x), len(y)], confidence)


def mean_interval(values, confidence: float = CONFIDENCE, scale=None) -> Interval:
    """The Student-t interval of the mean of `values` (non-finite ones dropped). For paired
    differences (variant - baseline per seed, or per test query) it is the paired interval:
    pairing has removed what the two share. `scale` as in `t_test` (pass the compared values'
    largest |value|)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    found = t_test(x, confidence, scale)
    return Interval(float(found.mean), float(found.low), float(found.high), len(x))


def beyond_noise(low, high, p_holm, alpha: float = ALPHA) -> np.ndarray:
    """The rule for a better/worse claim: Holm-adjusted p < alpha and the interval excludes 0
    (NaN, i.e. no test, is never beyond noise)."""
    low, high, p_holm = (np.asarray(a, dtype=float) for a in (low, high, p_holm))
    return (p_holm < alpha) & ((low > 0) | (high < 0))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment (family-wise error); NaN p-values (no test) stay NaN and
    are not counted in the family."""
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


class _Difference(NamedTuple):
    diff: float
    low: float
    high: float
    p: float
    paired: bool
    n: int
    note: str


def _difference(base: pd.Series, other: pd.Series) -> _Difference:
    """Paired by seed on the seeds both ran, each once (two runs of one seed in a variant leave
    no one-to-one pairing), when they share at least two (`--until-decided` gives the baseline
    more seeds than a variant it stopped early); else Welch's. p is NaN, with a note saying
    why, where no claim can be made."""
    unique = base.index.is_unique and other.index.is_unique
    shared = sorted(set(base.index) & set(other.index)) if unique else []
    paired = len(shared) >= 2
    x, y = other.to_numpy(), base.to_numpy()
    if paired:
        x, y = other.reindex(shared).to_numpy(), base.reindex(shared).to_numpy()
        scale = max(np.abs(x).max(), np.abs(y).max())
        found, n = t_test(x - y, scale=scale), len(x)
    else:
        found, n = welch_test(x, y), min(len(x), len(y))
    note = ""
    if n < MIN_CLAIM:
        note = f"n={n}: too few seeds to tell"
    elif math.isnan(found.low):
        what = "differences are all equal" if paired else "runs of each variant are all equal"
        note = f"the {what}: nothing to test against"
    p = math.nan if note else float(found.p)
    return _Difference(float(found.mean), float(found.low), float(found.high), p, paired, n, note)


def _verdict(d: _Difference, p_holm: float, direction: str | None) -> str:
    if direction is None:
        return "unknown"
    if d.note:
        return "undecided"
    if not beyond_noise(d.low, d.high, p_holm):
        return "noise"
    return "better" if (d.diff > 0) == (direction == "max") else "worse"


def compare(
    runs: pd.DataFrame, metric: str, baseline: str, direction: str | None, variants: list[str]
) -> list[Comparison]:
    """Every variant in `variants` but the baseline against it on `metric`; p-values are
    Holm-adjusted across the comparisons of this metric that make a test."""
    base = _seed_values(runs, baseline, metric)
    raw = [(v, _difference(base, _seed_values(runs, v, metric))) for v in variants if v != baseline]
    adjusted = holm([d.p for _, d in raw])
    return [
        Comparison(
            v,
            metric,
            d.diff,
            d.low,
            d.high,
            d.p,
            p_holm,
            d.paired,
            d.n,
            _verdict(d, p_holm, direction),
            d.note,
        )
        for (v, d), p_holm in zip(raw, adjusted, strict=True)
    ]
