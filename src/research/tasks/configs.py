"""The parameters of every task (LightningModule), declared once and torch-free.

The network, loss, optimizer and scheduler are built from their own groups and passed in; these
are the task's own settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from research.config.batches import (
    LABELLED_IMAGES,
    LABELLED_SEQUENCES,
    QUERIES_AND_DOCUMENTS,
    TOKEN_BLOCKS,
    TOKEN_WINDOWS,
)
from research.config.schema import Schema, fail, spec
from research.retrieval.configs import check_search
from research.utils.metric_names import DEFAULT_MONITOR

# torch.compile's modes (see torch.compile's docstring): the CUDA-graph ones skip their graphs on
# a CPU, where they behave as their namesakes without CUDA graphs.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass(kw_only=True)
class TaskConfig(Schema):
    """What every task declares: whether its network runs through torch.compile. Keyword-only,
    so each task's own fields keep their positions. `monitor` is the validation metric its best
    checkpoint follows unless the config names one (`callbacks.model_checkpoint.monitor`)."""

    monitor = DEFAULT_MONITOR

    compile: bool = spec(False, id_if_changed=True)
    """Compile the network with torch.compile (in place: checkpoints keep plain parameter names
    and load with or without it); needs a C++ compiler on CPU, Triton on a GPU."""
    compile_mode: str = spec("default", choices=COMPILE_MODES, id_if_changed=True)
    """torch.compile's mode: default, reduce-overhead (CUDA graphs), max-autotune (longer
    compilation, tuned kernels) or max-autotune-no-cudagraphs."""

    def check(self, at: str) -> None:
        if self.compile_mode != "default" and not self.compile:
            compile_flag = f"{at}.compile" if at else "compile"
            fail(
                at,
                "compile_mode",
                f"={self.compile_mode} applies only when compiling; add {compile_flag}=true",
            )


@dataclass
class ClassificationConfig(TaskConfig):
    """Classification of anything a network maps to logits; logs loss, accuracy, best val/acc."""

    targets = ("research.tasks.classification.ClassificationModule",)
    monitor = "val/acc"
    takes = (LABELLED_IMAGES, LABELLED_SEQUENCES)
    passthrough = ("net",)
    num_classes: int = spec(10, ge=2)
    """Classes the accuracy metrics count; the network's number of outputs."""
    top_k: int = spec(3, ge=1)
    """k of the top-k accuracy, also logged as val/acc_top<k> and test/acc_top<k> when there are
    clearly more classes than k (over 5 classes, k > 1)."""

    def check(self, at: str) -> None:
        super().check(at)
        if self.top_k > self.num_classes:
            fail(at, "top_k", f"={self.top_k} must be <= num_classes={self.num_classes}")


@dataclass
class MaskedLMConfig(TaskConfig):
    """Masked language modelling with BERT's 80/10/10 corruption; scored on masked tokens only."""

    targets = ("research.tasks.masked_lm.MaskedLMModule",)
    takes = (TOKEN_BLOCKS, LABELLED_SEQUENCES)  # the labels are not read
    passthrough = ("net",)
    mask_rate: float = spec(0.15, gt=0.0, lt=1.0)
    """Fraction of real tokens chosen for prediction: 80% become [MASK], 10% random, 10% kept."""
    mask_token_id: int = spec(4, ge=0)
    """The tokenizer's id of [MASK]."""
    vocab_size: int = spec(8000, ge=2)
    """The tokenizer's vocabulary size: random replacement tokens are drawn below it."""
    special_ids: list[int] = spec([0, 1, 2, 3, 4])
    """Token ids never chosen for masking (padding, [CLS], [MASK], ...); random replacements are
    drawn above the first len(special_ids) ids, so these should be the lowest ids."""

    def check_run(self, at: str, target: str, config: dict[str, Any]) -> None:
        """The [MASK] id is the data's tokenizer's: ListOps' and recall's vocabularies have none
        (there, id 4 is the digit 3 or a key). Data declared nowhere is not checked."""
        from research.config.registry import declaration

        data = config.get("data")
        schema = declaration(str(data.get("_target_"))) if isinstance(data, dict) else None
        mask = getattr(schema, "mask_token_id", None)
        if schema is None or mask == self.mask_token_id:
            return
        from research.config.pairing import data_with  # names, for the message only

        name, having = data_with("mask_token_id", data)
        if mask is None:
            fail(
                at,
                "mask_token_id",
                f"={self.mask_token_id}: {name} has no [MASK] token for a masked LM to write; "
                f"data options that have one: {', '.join(having)}",
            )
        if mask != self.mask_token_id:
            fail(at, "mask_token_id", f"={self.mask_token_id} is not {name}'s [MASK] id ({mask})")


@dataclass
class CausalLMConfig(TaskConfig):
    """Next-token language modelling; logs loss, perplexity (and bits per byte) per length."""

    targets = ("research.tasks.causal_lm.CausalLMModule",)
    takes = (TOKEN_WINDOWS,)
    passthrough = ("net",)
    init_from: str | None = None
    """A Lightning checkpoint whose network weights start this run (fine-tuning), or null."""

    def check(self, at: str) -> None:
        super().check(at)
        if self.init_from is not None and not Path(self.init_from).expanduser().is_file():
            fail(at, "init_from", f"={self.init_from!r} is not a file; give a .ckpt path or null")


@dataclass
class RetrievalConfig(TaskConfig):
    """Trains a late-interaction retriever; evaluation indexes the corpus and searches it."""

    targets = ("research.tasks.retrieval.RetrievalModule",)
    monitor = "val/ndcg@10"
    takes = (QUERIES_AND_DOCUMENTS,)
    passthrough = ("net",)
    search: dict = field(default_factory=lambda: {"kind": "exact", "k": 100})
    """The evaluation index: kind (exact, voyager, plaid), its parameters, and k, the depth of the
    ranking the metrics read."""
    encode_batch_size: int = spec(64, ge=1)
    """Texts per forward pass when evaluation encodes the corpus and the queries."""
    save_index: bool = False
    """Keep the test index in <run dir>/index/test (research.retrieval.load_searcher reads it)."""
    train_mini_batch_size: int | None = spec(None, ge=1)
    """Embed training texts this many at a time under activation checkpointing (GradCache-style);
    null embeds the whole batch at once."""
    train_length_bucket: int | None = spec(8, ge=1, id_if_changed=True)
    """Embed a training batch's documents this many at a time, longest first, each chunk padded
    to its own longest: the same embeddings, less padding (null: all at once; queries go whole)."""

    def check(self, at: str) -> None:
        super().check(at)
        check_search(at, self.search)
