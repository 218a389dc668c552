"""The dense retriever trained and evaluated by the retrieval task ColBERT uses, on a tiny BEIR
folder: a few steps lower the in-batch contrastive loss, the test search is exact over single
vectors and writes per-query scores, and a Lightning checkpoint gives the same evaluation back."""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import lightning as L
import pytest
import torch

from research.config.registry import declaration
from research.data.beir import BEIRDataModule
from research.losses.contrastive import Contrastive
from research.models.dense import DenseRetriever
from research.retrieval.metrics import DEFAULT_METRICS
from research.tasks.retrieval import RetrievalModule
from tests.helpers.beir_files import SPLITS, write_beir


def _module() -> RetrievalModule:
    net = DenseRetriever(max_length_query=16, max_length_document=32, dropout=0.0)
    optimizer = partial(torch.optim.AdamW, lr=1e-4)
    # Temperature 1.0 (the colbert_stdlib recipe's): at 0.05 zero-shot MiniLM already separates
    # these 10 easy queries, and the loss left is a tie (a batch holding one document twice).
    return RetrievalModule(net, Contrastive(temperature=1.0), optimizer=optimizer)


def _trainer(root: Path, **options) -> L.Trainer:
    return L.Trainer(
        accelerator="cpu",
        devices=1,
        default_root_dir=str(root),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **options,
    )


def _loss(module: RetrievalModule, batches: list[dict]) -> float:
    """The task's training loss, summed over fixed batches, without updating anything."""
    with torch.no_grad():
        return sum(
            float(
                module.loss(
                    *module._embed(b["queries"], is_query=True),
                    *module._embed(b["documents"], is_query=False),
                )
            )
            for b in batches
        )


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[RetrievalModule, BEIRDataModule]:
    """A dense module after 3 steps (one epoch of 10 queries in batches of 4, 4, 2), with the
    training loss over those batches before and after (`loss_before`, `loss_after`)."""
    root = tmp_path_factory.mktemp("dense")
    data = BEIRDataModule(
        path=str(write_beir(root / "beir")), data_dir=str(root / "d"), batch_size=4
    )
    data.setup("fit")
    batches = list(data.train_dataloader())
    assert all(len(b["documents"]) == 2 * len(b["queries"]) for b in batches)  # + 1 negative
    torch.manual_seed(0)
    module = _module()
    module.loss_before = _loss(module, batches)
    _trainer(root, max_epochs=1, limit_val_batches=0).fit(module, datamodule=data)
    module.loss_after = _loss(module, batches)
    return module, data


@pytest.mark.slow  # shares a dense retriever's training of about 3.5 s
def test_a_few_steps_lower_the_in_batch_contrastive_loss(trained):
    module, _ = trained
    assert module.trainer.global_step == 3
    assert module.loss_after < 0.9 * module.loss_before


@pytest.mark.slow  # trains and tests a dense retriever: about 6 s
def test_the_test_search_is_exact_over_single_vectors_and_writes_per_query_scores(
    trained, tmp_path
):
    module, data = trained
    (logged,) = _trainer(tmp_path).test(module, datamodule=data)
    scores = json.loads((tmp_path / "per_query_test.json").read_text())
    assert list(scores) == list(DEFAULT_METRICS)
    # By hand: each test query's cosine with all 18 documents, the rank of its positive.
    split = data.retrieval_split("test")
    ids = list(split.corpus)
    documents = torch.cat(module.net.encode([split.corpus[i] for i in ids], is_query=False))
    queries = {f"q{i}": f"d{i}" for i in SPLITS["test"]}
    assert set(scores["mrr@10"]) == set(queries)
    vectors = module.net.encode([split.queries[query] for query in queries])
    for (query, positive), vector in zip(queries.items(), vectors, strict=True):
        cosines = (documents @ vector.T).squeeze(1)
        rank = 1 + int((cosines > cosines[ids.index(positive)]).sum())
        assert scores["mrr@10"][query] == pytest.approx(1 / rank if rank <= 10 else 0.0)
        expected = 1 / math.log2(rank + 1) if rank <= 10 else 0.0
        assert scores["ndcg@10"][query] == pytest.approx(expected)
        assert scores["recall@100"][query] == 1.0
    for name, per_query in scores.items():
        assert logged[f"test/{name}"] == pytest.approx(sum(per_query.values()) / len(queries))
    monitor = declaration("research.tasks.retrieval.RetrievalModule").monitor
    assert monitor.replace("val/", "test/") in logged  # validation logs the same names


@pytest.mark.slow  # shares a dense retriever's training of about 3.5 s
def test_a_checkpoint_restores_the_trained_weights_and_their_evaluation(trained, tmp_path):
    module, data = trained
    _trainer(tmp_path / "trained").test(module, datamodule=data)
    checkpoint = tmp_path / "dense.ckpt"
    module.trainer.save_checkpoint(checkpoint)
    fresh = _module()  # the packaged MiniLM again, as research-eval builds it from the config
    assert _loss(fresh, [next(iter(data.train_dataloader()))]) != pytest.approx(
        _loss(module, [next(iter(data.train_dataloader()))])
    )
    _trainer(tmp_path / "restored").test(fresh, datamodule=data, ckpt_path=str(checkpoint))
    for name in ("trained", "restored"):
        assert (tmp_path / name / "per_query_test.json").is_file()
    assert json.loads((tmp_path / "restored" / "per_query_test.json").read_text()) == json.loads(
        (tmp_path / "trained" / "per_query_test.json").read_text()
    )
    state = fresh.state_dict()
    assert all(torch.equal(state[k], v) for k, v in module.state_dict().items())
