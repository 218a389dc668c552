"""The parameters of every task (LightningModule), declared once and torch-free.

The network, loss, optimizer and scheduler are built from their own groups and passed in; these
are the task's own settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from research.config.schema import Schema, fail, spec
from research.retrieval.configs import check_search


@dataclass
class ClassificationConfig(Schema):
    targets = ("research.tasks.classification.ClassificationModule",)
    passthrough = ("net",)
    num_classes: int = spec(10, ge=2)
    # Also logged as val/acc_top<k> when there are clearly more classes than k.
    top_k: int = spec(3, ge=1)

    def check(self, at: str) -> None:
        if self.top_k > self.num_classes:
            fail(at, "top_k", f"={self.top_k} must be <= num_classes={self.num_classes}")


@dataclass
class MaskedLMConfig(Schema):
    targets = ("research.tasks.masked_lm.MaskedLMModule",)
    passthrough = ("net",)
    mask_rate: float = spec(0.15, gt=0.0, lt=1.0)
    mask_token_id: int = spec(4, ge=0)
    vocab_size: int = spec(8000, ge=2)
    special_ids: list[int] = spec([0, 1, 2, 3, 4])


@dataclass
class CausalLMConfig(Schema):
    targets = ("research.tasks.causal_lm.CausalLMModule",)
    passthrough = ("net",)
    # A Lightning checkpoint whose network weights start this run (fine-tuning), or null.
    init_from: str | None = None

    def check(self, at: str) -> None:
        if self.init_from is not None and not Path(self.init_from).expanduser().is_file():
            fail(at, "init_from", f"={self.init_from!r} is not a file; give a .ckpt path or null")


@dataclass
class RetrievalConfig(Schema):
    targets = ("research.tasks.retrieval.RetrievalModule",)
    passthrough = ("net",)
    search: dict = field(default_factory=lambda: {"kind": "exact", "k": 100})
    encode_batch_size: int = spec(64, ge=1)
    save_index: bool = False
    # Embed training texts this many at a time under activation checkpointing (GradCache-style);
    # null embeds the whole batch at once.
    train_mini_batch_size: int | None = spec(None, ge=1)
    # Embed a training batch's documents this many at a time, longest first, each chunk padded
    # to its own longest: the same embeddings with less padding (null: all at once). Queries are
    # always padded to max_length_query, so they are embedded whole.
    train_length_bucket: int | None = spec(8, ge=1)

    def check(self, at: str) -> None:
        check_search(at, self.search)
