"""A retrieval run keeps each query's scores beside its averaged metrics, for paired comparisons."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from torch import nn

from research.reports.per_query import compare_runs
from research.retrieval.metrics import DEFAULT_METRICS
from research.tasks.retrieval import RetrievalModule
from tests.helpers.beir_files import COLBERT_TINY, SPLITS, write_beir
from tests.helpers.cli import metrics, run_cli, run_dirs

QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
# What the searches found: q1's positive first, q2's second, nothing judged for q3.
FOUND = {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d1": 0.8, "d2": 0.7}, "q3": {"d9": 0.1}}


def _evaluate(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, rank_zero: bool = True, sanity: bool = False
) -> dict[str, float]:
    """The end of a test epoch (the task's `_log_metrics`) on FOUND, in a stand-in trainer."""
    module = RetrievalModule(nn.Identity(), nn.Identity(), optimizer=None)
    module.trainer = SimpleNamespace(
        is_global_zero=rank_zero,
        sanity_checking=sanity,
        default_root_dir=str(run_dir),
        world_size=1,
    )
    logged: dict[str, float] = {}
    monkeypatch.setattr(module, "log_dict", lambda values, **_: logged.update(values))
    module._run, module._split = FOUND, SimpleNamespace(qrels=QRELS)
    module._log_metrics("test")
    return logged


@pytest.mark.slow  # its first ranx use in the process compiles numba kernels: about 4.5 s
def test_the_evaluation_step_writes_the_scores_behind_its_metrics(tmp_path, monkeypatch):
    logged = _evaluate(tmp_path, monkeypatch)
    scores = json.loads((tmp_path / "per_query_test.json").read_text())
    assert list(scores) == list(DEFAULT_METRICS)
    assert scores["mrr@10"] == {"q1": 1.0, "q2": 0.5, "q3": 0.0}
    for name, per_query in scores.items():
        assert logged[f"test/{name}"] == pytest.approx(sum(per_query.values()) / 3, abs=1e-12)


@pytest.mark.slow  # it takes the first ranx use over from the test above: 6.9 s
@pytest.mark.parametrize(("rank_zero", "sanity"), [(False, False), (True, True)])
def test_other_ranks_and_the_sanity_check_write_nothing(tmp_path, monkeypatch, rank_zero, sanity):
    logged = _evaluate(tmp_path, monkeypatch, rank_zero=rank_zero, sanity=sanity)
    assert logged["test/mrr@10"] == pytest.approx(0.5)
    assert list(tmp_path.iterdir()) == []


# The smallest ColBERT run on the tiny BEIR folder: one training step, one validation, one test.
TINY = [*COLBERT_TINY, "trainer.limit_train_batches=1"]


@pytest.mark.slow
def test_each_evaluation_writes_its_per_query_scores_to_the_run_dir(tmp_path: Path):
    data = write_beir(tmp_path / "beir")
    done = run_cli("research-train", *TINY, f"data.path={data}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = run_dirs(tmp_path)
    final = metrics(run)["final"]
    for split, qrels_split in (("test", "test"), ("val", "dev")):
        scores = json.loads((run / f"per_query_{split}.json").read_text())
        assert list(scores) == list(DEFAULT_METRICS)
        queries = {f"q{i}" for i in SPLITS[qrels_split]}
        for name, per_query in scores.items():
            assert set(per_query) == queries
            assert all(0.0 <= x <= 1.0 for x in per_query.values())
            # The logged metric is the mean of these scores (logged as float32).
            mean = sum(per_query.values()) / len(per_query)
            assert mean == pytest.approx(final[f"{split}/{name}"], abs=1e-6)
    # The report's reader takes the file as it is: a run against itself differs by nothing.
    same = compare_runs(run, run, "test/ndcg@10")
    assert (same.diff, same.p, same.queries) == (0.0, 1.0, len(SPLITS["test"]))
