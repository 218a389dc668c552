"""Training and evaluation of a retriever on an HF encoder: late interaction (ColBERT,
model=colbert) or one mean-pooled vector per text (DenseRetriever, model=dense).

Training batches hold raw text (the datamodule knows nothing of the model's tokenizer): B
queries and B*G documents grouped per query, positive first, plus teacher scores for
distillation. Validation and test search the split's whole corpus the way a user would: encode
every document once, index them, encode the queries, search, and score the ranking with IR
metrics (`<split>/ndcg@10`, `<split>/mrr@10`, `<split>/recall@100`). Rank zero also writes each
query's scores to `<run dir>/per_query_<split>.json`, so a report can compare runs query by query.
Both networks embed a text as rows (one per token, or one) compared by MaxSim over them, so the
loss and the searchers serve both alike (research.models.hf_retriever).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint
from torchmetrics import MeanMetric

from research.optim.factory import OptimizerFactory, SchedulerFactory
from research.retrieval.metrics import DEFAULT_METRICS
from research.tasks.base import Task
from research.tasks.configs import RetrievalConfig

log = logging.getLogger(__name__)


class RetrievalData(Protocol):
    """What a datamodule offers for evaluation: the corpus, queries and qrels of a split."""

    def retrieval_split(self, split: str) -> Any: ...


class RetrievalModule(Task):
    """Trains `net` (a ColBERT or a DenseRetriever) with `loss`; evaluation searches with the
    configured index.

    `search` names the index (`kind: exact | voyager | plaid`, its parameters) and `k`, the depth of
    the ranking that the metrics read; `save_index` keeps the test index under
    `<run dir>/index/<split>` so it can be loaded again with `research.retrieval.load_searcher`.
    """

    def __init__(
        self,
        net: nn.Module,
        loss: nn.Module,
        optimizer: OptimizerFactory,
        scheduler: SchedulerFactory | None = None,
        config: RetrievalConfig | None = None,
        **params: Any,
    ) -> None:
        super().__init__(net, loss, optimizer, scheduler)
        self.config = c = RetrievalConfig.build(config, params)
        search = dict(c.search)
        self.k = int(search.pop("k", 100))
        self.search_kind = search.pop("kind", "exact")
        self.search_params = search
        self.encode_batch_size, self.save_index = c.encode_batch_size, c.save_index
        self.train_mini_batch_size = c.train_mini_batch_size
        self.train_length_bucket = c.train_length_bucket
        self.train_loss = MeanMetric()
        self._searcher: Any = None
        self._split: Any = None
        self._run: dict[str, dict[str, float]] = {}

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        queries, query_mask = self._embed(batch["queries"], is_query=True)
        documents, document_mask = self._embed(batch["documents"], is_query=False)
        extra = {"teacher_scores": batch["teacher_scores"]} if "teacher_scores" in batch else {}
        loss = self.loss(queries, query_mask, documents, document_mask, **extra)
        self.train_loss.update(loss.detach())
        self.log_train_loss(loss, batch_size=self.batch_samples(batch))
        return loss

    def batch_samples(self, batch: dict[str, Any]) -> int:
        """A batch holds texts (tokenized by the network), so Lightning finds no tensor to
        count: one sample per query, with its documents."""
        return len(batch["queries"])

    def _embed(self, texts: list[str], is_query: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Token embeddings of a training batch with autograd, in the order of `texts`.

        Documents are embedded `train_length_bucket` at a time, longest first, so each forward
        pads only to its chunk's longest text (a batch of 32 stdlib functions cut at 128 tokens
        averages ~100). With `train_mini_batch_size`, queries and documents are embedded that
        many at a time under non-reentrant activation checkpointing: only the embeddings are
        kept, and backward runs each mini-batch's forward again (same dropout) before its own
        backward. The loss still scores every query against every document of the batch, so
        in-batch negatives grow with `data.batch_size` while activation memory stays that of
        one mini-batch, as GradCache (Gao et al. 2021) and PyLate's cached contrastive loss get
        by hand. Gradient accumulation would instead shrink the negatives to one micro-batch's.
        """
        cached = self.train_mini_batch_size
        bucket = None if is_query else self.train_length_bucket
        size = min((s for s in (cached, bucket) if s is not None), default=None)
        if size is None or len(texts) <= size:
            return self.net.embed(texts, is_query=is_query)
        # Queries are all padded to max_length_query: sorting them would save nothing.
        order = list(range(len(texts))) if is_query else self.net.length_order(texts, False)
        parts = []
        for start in range(0, len(order), size):
            chunk = [texts[i] for i in order[start : start + size]]
            if cached is None:
                parts.append(self.net.embed(chunk, is_query))
            else:
                parts.append(checkpoint(self.net.embed, chunk, is_query, use_reentrant=False))
        longest = max(embeddings.shape[1] for embeddings, _ in parts)
        embeddings = torch.cat([F.pad(e, (0, 0, 0, longest - e.shape[1])) for e, _ in parts])
        mask = torch.cat([F.pad(m, (0, longest - m.shape[1])) for _, m in parts])
        restore = torch.tensor(order, device=embeddings.device).argsort()
        return embeddings[restore], mask[restore]

    def on_train_epoch_end(self) -> None:
        self.log("train/loss_epoch", self.train_loss.compute())
        self.train_loss.reset()

    def _index_corpus(self, split: str) -> None:
        """Encode and index the split's corpus once per evaluation epoch."""
        from research.retrieval.searchers import build_searcher

        data: RetrievalData = self.trainer.datamodule  # type: ignore[assignment]
        self._split = data.retrieval_split(split)
        log.info("%s", self._split.described or f"{split}: {len(self._split.corpus)} documents")
        ids = list(self._split.corpus)
        texts = [self._split.corpus[i] for i in ids]
        embeddings = self.net.encode(texts, is_query=False, batch_size=self.encode_batch_size)
        self._searcher = build_searcher(self.search_kind, **self.search_params)
        self._searcher.add(ids, embeddings)
        self._run = {}

    def _search_step(self, batch: dict[str, Any]) -> None:
        embeddings = self.net.encode(
            batch["queries"], is_query=True, batch_size=self.encode_batch_size
        )
        hits = self._searcher.search(embeddings, self.k)
        for query_id, ranked in zip(batch["query_ids"], hits, strict=True):
            self._run[query_id] = dict(ranked)

    def _log_metrics(self, split: str) -> dict[str, float]:
        from research.retrieval.metrics import mean_score, per_query, write_per_query

        run = self._gathered_run()
        scores = per_query(run, {q: self._split.qrels[q] for q in run}, DEFAULT_METRICS)
        # The sanity check's few batches are not an evaluation: they would leave a file of a
        # handful of queries behind when a run stops before its first validation.
        if self.trainer.is_global_zero and not self.trainer.sanity_checking:
            write_per_query(Path(self.trainer.default_root_dir), split, scores)
        logged = {f"{split}/{name}": mean_score(values) for name, values in scores.items()}
        self.log_dict(logged, prog_bar=split == "val", sync_dist=False)
        self._searcher = None
        return logged

    def _gathered_run(self) -> dict[str, dict[str, float]]:
        """Under DDP each rank searched a shard of the queries; every rank scores them all."""
        if self.trainer.world_size == 1:
            return self._run
        shards: list[Any] = [None] * self.trainer.world_size
        torch.distributed.all_gather_object(shards, self._run)
        return {query: hits for shard in shards for query, hits in shard.items()}

    def on_validation_epoch_start(self) -> None:
        self._index_corpus("val")

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._search_step(batch)

    def on_validation_epoch_end(self) -> None:
        self._log_metrics("val")

    def on_test_epoch_start(self) -> None:
        self._index_corpus("test")
        if self.save_index and self.trainer.is_global_zero:
            self._searcher.save(Path(self.trainer.default_root_dir) / "index" / "test")

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._search_step(batch)

    def on_test_epoch_end(self) -> None:
        self._log_metrics("test")
