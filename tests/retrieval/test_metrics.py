"""evaluate_run against nDCG@10, MRR@10 and Recall@100 worked out from their definitions, and the
per-query scores behind them (what a run dir keeps for paired comparisons)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from research.retrieval.metrics import (
    evaluate_run,
    mean_score,
    per_query,
    read_per_query,
    write_per_query,
)

# ranx compiles its numba kernels at its first use in a process: about 7 s.
pytestmark = pytest.mark.slow

QRELS = {
    "q1": {"d1": 2, "d2": 1, "d5": 0},  # d5 judged but not relevant
    "q2": {"d3": 1},
    "q3": {"d4": 1},  # the run finds nothing for q3
}
RUN = {
    "q1": {"d2": 0.9, "d9": 0.8, "d1": 0.7, "d5": 0.6},
    "q2": {**{f"x{i}": 1.0 - i / 100 for i in range(10)}, "d3": 0.5},  # d3 at rank 11
    "q3": {},
    "q4": {"d1": 1.0},  # not judged: ignored
}


def expected_per_query() -> dict[str, dict[str, float]]:
    """nDCG with linear gain rel / log2(rank + 1) (as trec_eval), MRR = 1 / first relevant
    rank within the cutoff, Recall = relevant retrieved / relevant judged; per judged query."""
    dcg_q1 = 1 / math.log2(1 + 1) + 2 / math.log2(3 + 1)  # d2 (rel 1) at rank 1, d1 (rel 2) at 3
    ideal_q1 = 2 / math.log2(1 + 1) + 1 / math.log2(2 + 1)
    ndcg = {"q1": dcg_q1 / ideal_q1, "q2": 0.0, "q3": 0.0}  # q2's only relevant is at rank 11
    mrr = {"q1": 1 / 1, "q2": 0.0, "q3": 0.0}
    recall = {"q1": 2 / 2, "q2": 1 / 1, "q3": 0 / 1}
    return {"ndcg@10": ndcg, "mrr@10": mrr, "recall@100": recall}


def expected_metrics() -> dict[str, float]:
    """The mean over q1-q3 of `expected_per_query`."""
    return {name: sum(scores.values()) / 3 for name, scores in expected_per_query().items()}


def test_metrics_match_the_hand_computed_values():
    got = evaluate_run(RUN, QRELS)
    assert list(got) == ["ndcg@10", "mrr@10", "recall@100"]
    assert got == pytest.approx(expected_metrics(), abs=1e-9)
    assert all(isinstance(value, float) for value in got.values())


def test_per_query_scores_are_the_hand_computed_ones_and_average_to_the_metrics():
    got = per_query(RUN, QRELS)
    expected = expected_per_query()
    assert list(got) == list(expected)
    for name, scores in expected.items():
        assert list(got[name]) == ["q1", "q2", "q3"]  # q4 is not judged; q3 found nothing
        assert got[name] == pytest.approx(scores, abs=1e-9)
        assert mean_score(got[name]) == pytest.approx(evaluate_run(RUN, QRELS)[name], abs=1e-12)


def test_per_query_file_round_trips_and_a_damaged_one_reads_as_nothing(tmp_path):
    scores = per_query(RUN, QRELS)
    path = write_per_query(tmp_path, "test", scores)
    assert path == tmp_path / "per_query_test.json"
    assert read_per_query(tmp_path, "test") == scores
    assert read_per_query(tmp_path, "val") is None  # no file
    for damaged in ('{"ndcg@10": {"q1": ', '{"ndcg@10": [0.5]}', '{"ndcg@10": {"q1": "x"}}'):
        path.write_text(damaged)
        assert read_per_query(tmp_path, "test") is None
    assert [p.name for p in tmp_path.iterdir()] == ["per_query_test.json"]  # no temporaries


def test_ids_of_other_types_are_compared_as_strings_and_a_single_metric_is_a_dict():
    qrels = {1: {10: 1}, 2: {20: 1}}
    run = {"1": {"10": 0.5, "11": 0.9}, 2: {}}
    assert evaluate_run(run, qrels, metrics=("mrr@10",)) == {"mrr@10": pytest.approx(0.25)}


def test_a_run_without_any_result_scores_zero():
    assert evaluate_run({"q1": {}, "q2": {}}, QRELS) == {
        "ndcg@10": 0.0,
        "mrr@10": 0.0,
        "recall@100": 0.0,
    }


def test_mistakes_are_one_line_errors():
    with pytest.raises(ValueError, match="without any judged query") as err:
        evaluate_run(RUN, {"q1": {}})
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="at least one metric"):
        evaluate_run(RUN, QRELS, metrics=())
    with pytest.raises(ValueError, match="Metric recal not supported") as err:
        evaluate_run(RUN, QRELS, metrics=("recal@100",))
    assert "\n" not in str(err.value)


def test_importing_the_module_does_not_import_ranx():
    code = "import sys, research.retrieval.metrics; print('ranx' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
