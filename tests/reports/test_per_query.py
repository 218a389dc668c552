"""Retrieval variants compared query by query: the paired randomization test and its t-interval
(by hand and by seeded simulation: ~alpha false positives under a null, a real shift found),
the report's section built from run dirs with per-query files, and two runs compared alone."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from research.reports import analyse
from research.reports.errors import ReportError
from research.reports.per_query import compare_runs, compare_scores, randomization_p
from research.retrieval.metrics import write_per_query
from tests.reports.conftest import write_run

METRIC = "final.test/ndcg@10"
ALPHA = 0.05


def _set_scores(run_dir: Path, scores: dict[str, float]) -> None:
    """Make the run's test/ndcg@10 the mean of `scores`, kept per query as an evaluation does."""
    payload = json.loads((run_dir / "metrics.json").read_text())
    payload["final"]["test/ndcg@10"] = float(np.mean(list(scores.values())))
    (run_dir / "metrics.json").write_text(json.dumps(payload))
    write_per_query(run_dir, "test", {"ndcg@10": scores})


def _retrieval_run(run_dir: Path, seed: int, variant: str, scores: dict[str, float]) -> None:
    write_run(run_dir, seed, [f"seed={seed}", f"variant={variant}"], variant=variant)
    _set_scores(run_dir, scores)


def _scores(rng: np.random.Generator, difficulty: np.ndarray, shift: float) -> dict[str, float]:
    """One run's per-query nDCG: the query's difficulty plus noise (and `shift`), in [0, 1]."""
    values = np.clip(difficulty + shift + rng.normal(0, 0.15, len(difficulty)), 0, 1)
    return {f"q{i}": float(v) for i, v in enumerate(values)}


def _study(root: Path, shifts: dict[str, float], queries: int = 200, seeds: int = 3) -> Path:
    rng = np.random.default_rng(7)
    difficulty = rng.uniform(0.2, 0.8, queries)
    for variant, shift in shifts.items():
        for seed in range(seeds):
            _retrieval_run(
                root / f"{variant}_s{seed}", seed, variant, _scores(rng, difficulty, shift)
            )
    return root


def _per_query_matrix(root: Path, variant: str) -> np.ndarray:
    """runs x queries of a variant, read straight from the files (not through the code tested)."""
    rows = []
    for path in sorted(root.glob(f"{variant}_s*/per_query_test.json")):
        scores = json.loads(path.read_text())["ndcg@10"]
        rows.append([scores[q] for q in sorted(scores)])
    return np.array(rows)


def test_randomization_p_by_hand():
    # d = (1, 2, 3): the 8 sign vectors give |sum| = 6, 4, 2, 0, 0, 2, 4, 6; two reach 6.
    assert randomization_p(np.array([1.0, 2.0, 3.0])) == 0.25
    assert randomization_p(np.array([0.1, 0.2, 0.3])) == 0.25  # float round-off is a tie
    assert randomization_p(np.zeros(5)) == 1.0  # no difference: nothing to see
    assert randomization_p(np.zeros(50)) == 1.0
    # 50 queries all improved: no random sign vector reaches it, and p is still never 0.
    assert randomization_p(np.ones(50), resamples=999) == 1 / 1000
    # Two queries can never make a claim: the smallest p is 2 / 2^2.
    assert randomization_p(np.array([0.3, 0.4])) == 0.5


def test_interval_is_student_t_over_queries_of_the_seed_averaged_differences():
    rng = np.random.default_rng(0)
    base, other = rng.uniform(size=(3, 30)), rng.uniform(size=(2, 30))
    diff, low, high, p = compare_scores(base, other)
    d = other.mean(axis=0) - base.mean(axis=0)
    half = stats.t.ppf(0.975, 29) * d.std(ddof=1) / math.sqrt(30)
    assert diff == pytest.approx(d.mean())
    assert (low, high) == pytest.approx((d.mean() - half, d.mean() + half))
    assert 0 < p <= 1 and compare_scores(base, other) == (diff, low, high, p)  # seeded


def _null_and_shifted(sims: int, queries: int, shift: float, seed: int) -> tuple[np.ndarray, ...]:
    """Per sim: (p, low, high) of 3 baseline seeds against 3 variant seeds, per-query scores
    drawn from one distribution (plus `shift` for the variant)."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(sims):
        difficulty = rng.uniform(0.2, 0.8, queries)
        base = np.clip(difficulty + rng.normal(0, 0.15, (3, queries)), 0, 1)
        other = np.clip(difficulty + shift + rng.normal(0, 0.15, (3, queries)), 0, 1)
        _, low, high, p = compare_scores(base, other, resamples=999, seed=int(rng.integers(1e9)))
        found.append((p, low, high))
    return tuple(np.array(found).T)


@pytest.mark.parametrize("queries", [10, 60], ids=["exact", "monte_carlo"])
@pytest.mark.slow
def test_under_a_null_the_claim_rate_is_about_alpha(queries: int):
    p, low, high = _null_and_shifted(2000, queries, 0.0, seed=queries)
    claimed = (p < ALPHA) & ((low > 0) | (high < 0))
    # 2000 sims: the standard error of a 5% rate is 0.5 points.
    assert (p < ALPHA).mean() <= ALPHA + 0.015
    assert claimed.mean() <= ALPHA + 0.015
    assert (p < ALPHA).mean() >= ALPHA - 0.025  # not a test that never rejects
    coverage = ((low <= 0) & (high >= 0)).mean()  # the true difference is 0
    assert abs(coverage - 0.95) < 0.02


def test_a_real_per_query_shift_is_found():
    p, low, high = _null_and_shifted(300, 60, 0.08, seed=1)
    assert ((p < ALPHA) & (low > 0)).mean() > 0.9


def test_report_compares_variants_query_by_query(tmp_path: Path):
    root = _study(tmp_path / "runs", {"base": 0.0, "better": 0.05, "same": 0.0})
    report = analyse(root, [METRIC], baseline="base")
    section = report.markdown.split("## Against the baseline `base`, query by query")[1]
    rows = {line.split(" | ")[1]: line for line in section.splitlines() if line.startswith("| ")}
    assert rows["better"].endswith("| better |")
    assert rows["same"].endswith("| noise |")
    assert "| 200 | 3 / 3 |" in rows["better"]
    # Δ is the mean over queries of the seed-averaged difference, read straight from the files.
    d = _per_query_matrix(root, "better").mean(0) - _per_query_matrix(root, "base").mean(0)
    assert f"+{d.mean():.3f}" in rows["better"].replace("**", "")
    assert "covers the sampling of test queries" in section
    assert "training noise" in section


def test_report_has_no_query_section_without_per_query_files(runs_folder: Path):
    report = analyse(runs_folder, ["final.test/acc"])
    assert "query by query" not in report.markdown


def test_a_file_of_another_evaluation_or_other_queries_is_said(tmp_path: Path):
    root = _study(tmp_path / "runs", {"base": 0.0, "wide": 0.05}, queries=50, seeds=2)
    # A later evaluation overwrote one run's file: its mean is no longer the run's value.
    stale = root / "wide_s1" / "per_query_test.json"
    stale.write_text(json.dumps({"ndcg@10": {f"q{i}": 0.0 for i in range(50)}}))
    # One baseline run scored 10 queries fewer.
    short = root / "base_s0"
    scores = json.loads((short / "per_query_test.json").read_text())["ndcg@10"]
    _set_scores(short, {q: scores[q] for q in list(scores)[:40]})
    markdown = analyse(root, [METRIC], baseline="base").markdown
    assert "`wide`: 1 of 2 runs have no per-query scores of this value" in markdown
    assert "compared on the 40 they share" in markdown
    assert "| 40 | 1 / 2 |" in markdown


def test_two_single_runs_compared_from_python(tmp_path: Path):
    root = _study(tmp_path / "runs", {"a": 0.0, "b": 0.1}, queries=100, seeds=1)
    found = compare_runs(root / "a_s0", root / "b_s0", "test/ndcg@10")
    d = _per_query_matrix(root, "b")[0] - _per_query_matrix(root, "a")[0]
    assert found.diff == pytest.approx(d.mean())
    assert found.queries == 100 and found.runs == (1, 1)
    assert found.verdict == "better" and found.p == found.p_holm < ALPHA
    with pytest.raises(ReportError, match="holds no per-query mrr@10") as err:
        compare_runs(root / "a_s0", root / "b_s0", "test/mrr@10")
    assert "\n" not in str(err.value)
    with pytest.raises(ReportError, match="is not <split>/<name>"):
        compare_runs(root / "a_s0", root / "b_s0", "ndcg")
