"""A ColBERT run end to end on a BEIR folder: train, test with the index, re-evaluate the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.beir_files import COLBERT_TINY, write_beir
from tests.helpers.cli import metrics, run_cli, run_dirs

# Short texts and two steps keep MiniLM fast; eval_corpus=full searches all 18 documents.
TINY = [*COLBERT_TINY, "trainer.limit_train_batches=2"]
METRICS = ("test/ndcg@10", "test/mrr@10", "test/recall@100")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("colbert")
    data = write_beir(root / "beir")
    done = run_cli("research-train", *TINY, f"data.path={data}", "model.save_index=true", cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = run_dirs(root)
    return run


@pytest.mark.slow  # shares a ColBERT training run of about 15 s
def test_colbert_run_trains_and_reports_ir_metrics(trained: Path):
    m = metrics(trained)
    assert m["status"] == "completed"
    assert m["monitor"] == "val/ndcg@10" and m["mode"] == "max"
    for name in METRICS:
        assert 0.0 <= m["best"][name] <= 1.0
    # 4 test queries, 18 documents: any ranking of all documents holds every positive.
    assert m["best"]["test/recall@100"] == 1.0
    assert (trained / "checkpoints" / "best.ckpt").is_file()


@pytest.mark.slow  # shares a ColBERT training run of about 15 s
def test_colbert_test_index_is_saved_and_loads_back(trained: Path):
    from research.retrieval import load_searcher

    searcher = load_searcher(trained / "index" / "test")
    assert searcher.kind == "exact"


@pytest.mark.slow  # shares a ColBERT training run of about 15 s
def test_research_eval_reproduces_the_retrieval_metrics(trained: Path, workdir: Path):
    done = run_cli("research-eval", f"run_dir={trained}", cwd=workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    m = metrics(evaluation)
    assert m["status"] == "completed"
    for name in METRICS:
        assert m["final"][name] == pytest.approx(metrics(trained)["best"][name], abs=1e-6)


@pytest.mark.slow  # shares a ColBERT training run of about 15 s
def test_research_eval_with_the_voyager_index_agrees_on_a_tiny_corpus(trained: Path, workdir):
    change = 'overrides=["model.search.kind=voyager"]'
    done = run_cli("research-eval", f"run_dir={trained}", change, cwd=workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    final = metrics(evaluation)["final"]
    # Every document is a candidate on 18 documents, and re-ranking is exact.
    assert final["test/ndcg@10"] == pytest.approx(metrics(trained)["best"]["test/ndcg@10"])


@pytest.mark.slow  # shares a ColBERT training run of about 15 s
def test_research_eval_with_the_plaid_index_on_a_tiny_corpus(trained: Path, workdir):
    # The saved exact search has only its kind: PLAID's keys are added (+), as in research-train.
    plaid = ["model.search.kind=plaid", "+model.search.centroids=16", "+model.search.probes=16"]
    change = "overrides=[" + ",".join(f'"{o}"' for o in [*plaid, "+model.search.nbits=4"]) + "]"
    done = run_cli("research-eval", f"run_dir={trained}", change, cwd=workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    final = metrics(evaluation)["final"]
    # Every document is a candidate (all centroids probed); only decompression differs.
    assert final["test/ndcg@10"] == pytest.approx(metrics(trained)["best"]["test/ndcg@10"], abs=0.1)


@pytest.mark.slow  # shares a ColBERT training run of about 15 s
def test_research_index_builds_a_saved_index_over_a_beir_corpus(trained: Path, tmp_path, capsys):
    from research.cli.index import main
    from research.retrieval import load_searcher

    corpus = write_beir(tmp_path / "beir")
    out = tmp_path / "index"
    args = [str(trained), str(corpus), str(out), "--kind", "plaid", "--param", "centroids=8"]
    assert main(args) == 0
    index = load_searcher(out)
    assert index.kind == "plaid" and len(index) == 18 and index.config.centroids == 8
    capsys.readouterr()  # the build's own output (progress bar, faiss's small-sample warning)
    assert main(args) == 2  # the folder exists now: nothing is overwritten
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"research-index: error: out {out} already exists; give a new folder " + (
        "(nothing is overwritten)"
    )
    bad = [str(trained), str(corpus), str(tmp_path / "x"), "--kind", "plaid", "--param", "nbits=3"]
    assert main(bad) == 2
    assert "search.nbits=3 is not valid; choose one of: 1, 2, 4, 8" in capsys.readouterr().err


def test_unknown_search_kind_is_a_one_line_config_error(workdir: Path):
    done = run_cli(
        "research-train", *TINY, "data.path=/nowhere", "model.search.kind=faiss", cwd=workdir
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.endswith(
        "model.search.kind='faiss' is not valid; choose one of: exact, voyager, plaid"
    )
