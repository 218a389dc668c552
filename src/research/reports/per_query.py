"""Retrieval runs compared query by query: does a lead exceed the sampling error of the queries?

The report's seed interval (`research.reports.stats`) says how a variant's mean moves with
training noise on one fixed set of test queries; a test set is itself a sample of queries, and
with a few hundred of them a lead of a point of nDCG can be luck of the draw. Each retrieval
evaluation writes its per-query scores (`per_query_<split>.json`, `research.retrieval.metrics`);
here each query's score is averaged over a variant's runs (seeds) and over the baseline's, and
the per-query differences d_q = variant - baseline are tested over the queries:

- the interval is Student's t-interval of the mean of d_q (`stats.mean_interval`; Student,
  Biometrika 6(1), 1908): with the hundreds of queries of a test set the mean is close to
  normal whatever the shape of d_q;
- p is Fisher's randomization test in its paired form (Fisher, The Design of Experiments, 1935,
  section 21): under the null that the two systems are exchangeable on every query, each d_q is
  as likely to have either sign, so |sum of d_q| is compared with its value under every sign
  vector. Smucker, Allan & Carterette (CIKM 2007, "A comparison of statistical significance
  tests for information retrieval evaluation") recommend it for IR metrics, whose per-query
  values are bounded, lumpy and often 0. It is exact over all 2^n sign vectors for n <= 12
  queries, else estimated from RESAMPLES seeded random ones as (1 + hits) / (1 + RESAMPLES),
  which is never 0 and keeps the test's level (Phipson & Smyth, "Permutation p-values should
  never be zero", SAGMB 9(1), 2010). With equal seed counts per variant the null holds exactly;
- p is Holm-adjusted across the variants of each metric, and a variant is better or worse
  beyond query sampling only when that p < ALPHA and the interval excludes 0 (`beyond_noise`).

Why not `ranx.compare`: its Fisher test returns hits / permutations, so 0 when no permutation
reaches the observed difference, and it needs ranx's numba build (seconds) in a report that
otherwise imports neither ranx nor torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from research.reports.errors import ReportError
from research.reports.stats import ALPHA, CONFIDENCE, beyond_noise, holm, mean_interval
from research.reports.tables import decimals, signed
from research.retrieval.metrics import PER_QUERY_FILE, read_per_query
from research.utils.metric_names import direction_by_name

RESAMPLES = 9999
_SEED = 0  # a fixed stream of sign vectors: the same runs always give the same p
_EXACT_UP_TO = 12  # queries; 2^12 = 4096 sign vectors, fewer than RESAMPLES
# A per-query file belongs to the evaluation behind a run's value when its mean is that value
# up to float32 rounding (metrics.json holds what Lightning logged, as float32).
_SAME_VALUE = 1e-5

LEGEND = (
    "Δ = mean over the test queries of (variant − baseline), each query's score first averaged "
    f"over the runs (seeds) of each; [{CONFIDENCE:.0%} Student-t interval over queries]; p = "
    "two-sided paired randomization test (the signs of the per-query differences flipped; exact "
    f"up to {_EXACT_UP_TO} queries, else {RESAMPLES:,} seeded draws), Holm-adjusted across the "
    f"variants of each metric; **bold** = beyond query sampling: p < {ALPHA} and the interval "
    "excludes 0. This interval covers the sampling of test queries (another query set of this "
    "size from the same source, for these same trained models), while the seed interval above "
    "covers training noise on these same queries: a lead is solid when it clears both."
)


@dataclass(frozen=True)
class QueryComparison:
    """One variant (or run) against the baseline on one metric, paired by query."""

    variant: str
    metric: str
    diff: float  # mean over queries of (variant - baseline)
    low: float  # the interval over queries; NaN with < 2 queries or no spread
    high: float
    p: float
    p_holm: float
    queries: int
    runs: tuple[int, int]  # runs averaged per query: (variant, baseline)
    verdict: str  # "better", "worse", "noise", "undecided" (no interval), "unknown" (direction)


def randomization_p(
    differences: np.ndarray, resamples: int = RESAMPLES, seed: int = _SEED
) -> float:
    """Two-sided p of the paired randomization test of mean(differences) = 0 (module docstring):
    exact over every sign vector up to `_EXACT_UP_TO` values, else Monte Carlo with `resamples`
    seeded sign vectors; 1 when every difference is 0."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n == 0:
        return math.nan
    # A sign vector reaching the observed |sum| in another order of additions is a tie, not less.
    reach = abs(d.sum()) - 1e-9 * np.abs(d).sum()
    if n <= _EXACT_UP_TO:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        return float(np.mean(np.abs(signs @ d) >= reach))
    rng = np.random.default_rng(seed)
    hits, chunk = 0, max(1, 2**20 // n)  # sign matrices of at most ~1M entries
    for start in range(0, resamples, chunk):
        signs = 1 - 2 * rng.integers(0, 2, size=(min(chunk, resamples - start), n), dtype=np.int8)
        hits += int(np.count_nonzero(np.abs(signs @ d) >= reach))
    return (1 + hits) / (1 + resamples)


def compare_scores(
    baseline: np.ndarray, other: np.ndarray, resamples: int = RESAMPLES, seed: int = _SEED
) -> tuple[float, float, float, float]:
    """(diff, low, high, p) of `other` against `baseline`, each runs x queries (same query
    order): each query's score averaged over the runs, then the test over queries."""
    base, mine = np.atleast_2d(baseline).mean(axis=0), np.atleast_2d(other).mean(axis=0)
    scale = max(np.abs(base).max(initial=0.0), np.abs(mine).max(initial=0.0))
    found = mean_interval(mine - base, CONFIDENCE, scale)
    return found.mean, found.low, found.high, randomization_p(mine - base, resamples, seed)


def verdict(diff: float, low: float, high: float, p_holm: float, direction: str | None) -> str:
    """better / worse (beyond query sampling, by `direction`), noise, undecided or unknown."""
    if direction is None:
        return "unknown"
    if math.isnan(low) or math.isnan(p_holm):
        return "undecided"
    if not beyond_noise(low, high, p_holm):
        return "noise"
    return "better" if (diff > 0) == (direction == "max") else "worse"


def _split_metric(metric: str) -> tuple[str, str] | None:
    """(split, metric name) of a report column (`final.test/ndcg@10` -> test, ndcg@10)."""
    logged = metric.split(".", 1)[1] if metric.startswith(("final.", "best.")) else metric
    split, _, name = logged.partition("/")
    return (split, name) if split and name else None


def _run_scores(run_dir: Path, metric: str, value: float | None) -> dict[str, float] | None:
    """The per-query scores behind a run's `value` of `metric`, or None when the run has none,
    or its file holds another evaluation (e.g. a later epoch's, for a `best.val/*` column)."""
    where = _split_metric(metric)
    found = read_per_query(run_dir, where[0]) if where else None
    scores = (found or {}).get(where[1]) if where else None
    if not scores:
        return None
    return None if value is not None and not behind_value(scores, value) else scores


def behind_value(scores: dict[str, float], value: float) -> bool:
    """Whether per-query `scores` are the evaluation that gave a run's `value` (their mean,
    up to float32 rounding), not another one (e.g. a later epoch's)."""
    return abs(math.fsum(scores.values()) / len(scores) - value) <= _SAME_VALUE


def score_matrices(pools: Iterable[list[dict[str, float]]]) -> tuple[list[str], list[np.ndarray]]:
    """The queries every run scored, and each pool's runs x queries matrix over them."""
    pools = list(pools)
    common = set.intersection(*(set(s) for pool in pools for s in pool))
    queries = sorted(common)
    return queries, [np.array([[s[q] for q in queries] for s in pool]) for pool in pools]


def _finish(
    raw: list[tuple[str, tuple[float, float, float, float], int, tuple[int, int]]],
    metric: str,
    direction: str | None,
) -> list[QueryComparison]:
    adjusted = holm([r[1][3] for r in raw])
    return [
        QueryComparison(v, metric, *r, p, n, runs, verdict(*r[:3], p, direction))
        for (v, r, n, runs), p in zip(raw, adjusted, strict=True)
    ]


def compare_runs(baseline: Path, other: Path, metric: str = "test/ndcg@10") -> QueryComparison:
    """Two single runs (run dirs) compared query by query on `metric` (`<split>/<name>`, e.g.
    `test/ndcg@10`): `other` minus `baseline` over the queries both scored."""
    where = _split_metric(metric)
    if where is None:
        raise ReportError(f"metric {metric!r} is not <split>/<name>; e.g. test/ndcg@10")
    file = PER_QUERY_FILE.format(split=where[0])
    pool = []
    for run_dir in (baseline, other):
        scores = _run_scores(Path(run_dir), metric, None)
        if scores is None:
            raise ReportError(
                f"{Path(run_dir) / file} holds no per-query {where[1]}; give a run dir of a "
                "retrieval evaluation (it writes that file)"
            )
        pool.append([scores])
    queries, (base, mine) = score_matrices(pool)
    if not queries:
        raise ReportError(f"{baseline} and {other} scored no query in common on {metric}")
    raw = [(str(other), compare_scores(base, mine), len(queries), (1, 1))]
    (found,) = _finish(raw, metric, direction_by_name(metric))
    return found


def compare_variants(
    runs: pd.DataFrame,
    metric: str,
    baseline: str,
    direction: str | None,
    variants: list[str],
    source: Path | None = None,
) -> tuple[list[QueryComparison], list[str]]:
    """Every variant but the baseline against it on `metric` (a report column), paired by query
    over the completed runs with per-query scores; and notes on what was left out (none when
    no run has per-query scores of `metric`: not a retrieval metric). Run dirs relative in
    `runs` are read under `source`."""
    pools: dict[str, list[dict[str, float]]] = {}
    notes = []
    for variant in variants:
        done = runs[(runs["variant"] == variant) & (runs["status"] == "completed")]
        done = done[done[metric].notna()]
        found = []
        for run_dir, value in zip(done["run_dir"], done[metric], strict=True):
            path = Path(run_dir) if source is None else Path(source) / run_dir
            found.append(_run_scores(path, metric, float(value)))
        pools[variant] = [s for s in found if s is not None]
        if len(pools[variant]) < len(found):
            notes.append(
                f"{metric}, `{variant}`: {len(found) - len(pools[variant])} of {len(found)} runs "
                "have no per-query scores of this value (no file, or one of another evaluation, "
                "e.g. a later epoch); left out"
            )
    if not any(pools.values()):
        return [], []
    raw = []
    for variant in variants:
        if variant == baseline or not pools[variant]:
            continue
        if not pools[baseline]:
            notes.append(
                f"{metric}, `{variant}`: the baseline has no per-query scores; not compared"
            )
            continue
        queries, (base, mine) = score_matrices([pools[baseline], pools[variant]])
        runs_used = (len(pools[variant]), len(pools[baseline]))
        if not queries:
            notes.append(f"{metric}, `{variant}`: no query scored by every run; not compared")
            continue
        if any(len(s) > len(queries) for s in pools[baseline] + pools[variant]):
            notes.append(
                f"{metric}, `{variant}`: runs scored different queries; compared on the "
                f"{len(queries)} they share"
            )
        raw.append((variant, compare_scores(base, mine), len(queries), runs_used))
    return _finish(raw, metric, direction), notes


def _cell(c: QueryComparison) -> str:
    if math.isnan(c.low):
        return f"{signed(c.diff, 4)} (no interval)"
    places = decimals(c.diff, (c.high - c.low) / 2)
    text = f"{signed(c.diff, places)} [{signed(c.low, places)}, {signed(c.high, places)}]"
    return f"**{text}**" if c.verdict in ("better", "worse") else text


def per_query_markdown(
    runs: pd.DataFrame,
    metrics: list[str],
    directions: dict[str, str | None],
    baseline: str,
    variants: list[str],
    source: Path | None = None,
) -> str:
    """The report's section comparing every variant with the baseline query by query, for the
    metrics whose runs left per-query scores (retrieval metrics); "" when none did."""
    lines, notes = [], []
    for metric in metrics:
        found, said = compare_variants(runs, metric, baseline, directions[metric], variants, source)
        notes += said
        for c in found:
            p = "–" if math.isnan(c.p_holm) else f"{c.p_holm:.2g}"
            runs_used = f"{c.runs[0]} / {c.runs[1]}"
            cells = [metric, c.variant, _cell(c), p, str(c.queries), runs_used, c.verdict]
            lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    if not lines and not notes:
        return ""
    table = [
        "| metric | variant | Δ over queries | p (Holm) | queries | runs (variant / baseline) "
        "| verdict |",
        "|---|---|---:|---:|---:|---:|---|",
        *lines,
        "",
        LEGEND,
        "",
    ]
    return "\n".join(
        [
            "",  # appended to the report's markdown after the seed comparison
            f"## Against the baseline `{baseline}`, query by query",
            "",
            *(table if lines else []),
            *(f"- {note}" for note in notes),
            *([""] if notes else []),
        ]
    )
