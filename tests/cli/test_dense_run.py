"""The dense baseline end to end with the colbert_stdlib recipe (`model=dense`) on a tiny BEIR
folder: train, per-query scores, and research-eval re-testing the best checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from research.retrieval.metrics import DEFAULT_METRICS
from tests.helpers.beir_files import COLBERT_TINY, SPLITS, write_beir
from tests.helpers.cli import metrics, run_cli, run_dirs

# The ColBERT smoke run with the dense network instead (it has no projection to size).
TINY = [
    *(o for o in COLBERT_TINY if not o.startswith("model.net.embedding_size")),
    "model=dense",
    "loss.temperature=0.05",
    "trainer.limit_train_batches=2",
]
METRICS = tuple(f"test/{name}" for name in DEFAULT_METRICS)


@pytest.mark.slow
def test_the_dense_variant_trains_writes_per_query_scores_and_re_evaluates(tmp_path: Path):
    data = write_beir(tmp_path / "beir")
    done = run_cli("research-train", *TINY, f"data.path={data}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = run_dirs(tmp_path)
    m = metrics(run)
    assert m["status"] == "completed"
    assert m["config"]["model"]["net"]["_target_"] == "research.models.dense.DenseRetriever"
    assert m["config"]["loss"]["temperature"] == 0.05
    scores = json.loads((run / "per_query_test.json").read_text())
    assert set(scores["ndcg@10"]) == {f"q{i}" for i in SPLITS["test"]}
    for name in METRICS:
        per_query = scores[name.removeprefix("test/")]
        assert m["best"][name] == pytest.approx(sum(per_query.values()) / len(per_query), abs=1e-6)

    evaluation_dir = tmp_path / "eval"
    evaluation_dir.mkdir()
    done = run_cli("research-eval", f"run_dir={run}", cwd=evaluation_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    (evaluation,) = run_dirs(evaluation_dir, task="eval")
    for name in METRICS:
        assert metrics(evaluation)["final"][name] == pytest.approx(m["best"][name], abs=1e-6)
