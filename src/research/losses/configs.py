"""The parameters of every loss here, declared once and torch-free."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from research.config.batches import (
    LABELLED_IMAGES,
    LABELLED_SEQUENCES,
    QUERIES_AND_DOCUMENTS,
    TOKEN_BLOCKS,
    TOKEN_WINDOWS,
)
from research.config.errors import ConfigError
from research.config.schema import Schema, fail, spec


def _teacher_scores(config: dict[str, Any]) -> str | None:
    """The run's file of teacher scores (`data.distillation_file`), if it has one."""
    data = config.get("data")
    return data.get("distillation_file") if isinstance(data, dict) else None


@dataclass
class CrossEntropyConfig(Schema):
    """torch's cross-entropy (research.losses.cross_entropy), its class weights a YAML list."""

    targets = ("research.losses.cross_entropy.cross_entropy", "torch.nn.CrossEntropyLoss")
    # Class logits against labels; the LM tasks score each token as a class.
    takes = (LABELLED_IMAGES, LABELLED_SEQUENCES, TOKEN_BLOCKS, TOKEN_WINDOWS)
    weight: list[float] | None = None
    """Loss weight of each class, one per class (e.g. for imbalanced classes); null: all equal."""
    ignore_index: int = -100
    """Target value that adds no loss or gradient, e.g. the label of padding positions."""
    reduction: str = spec("mean", choices=["mean", "sum", "none"])
    """How the per-example losses combine: their mean, their sum, or none (one loss each)."""
    label_smoothing: float = spec(0.0, ge=0.0, le=1.0)
    """Share of each target spread evenly over all classes; 0: hard targets."""


@dataclass
class ContrastiveConfig(Schema):
    """In-batch contrastive loss over MaxSim scores, as PyLate's (research.losses.contrastive)."""

    targets = ("research.losses.contrastive.Contrastive",)
    takes = (QUERIES_AND_DOCUMENTS,)
    temperature: float = spec(1.0, gt=0.0)
    """Divides MaxSim sums (up to the query length). 1.0 is colbert-ai's plain cross-entropy on
    them; the 0.02 of other recipes is meant for scores averaged over query tokens, not sums."""
    size_average: bool = True
    """Mean of the per-query losses over the batch (true) or their sum (false)."""
    gather_across_devices: bool = True
    """Under DDP, score against the documents of every rank, not only this rank's."""

    def check_run(self, at: str, target: str, config: dict[str, Any]) -> None:
        found = _teacher_scores(config)
        if found is not None:
            fail(
                "data",
                "distillation_file",
                f"={found} gives teacher scores, which only loss=distillation trains on; "
                "choose it, or set data.distillation_file=null",
            )


@dataclass
class DistillationConfig(Schema):
    """KL distillation from teacher scores per query (research.losses.distillation)."""

    targets = ("research.losses.distillation.Distillation",)
    takes = (QUERIES_AND_DOCUMENTS,)
    temperature: float = spec(1.0, gt=0.0)
    """Divides student and teacher scores before each softmax; the loss is not scaled by T^2."""

    def check_run(self, at: str, target: str, config: dict[str, Any]) -> None:
        if _teacher_scores(config) is None:
            raise ConfigError(
                f"{at or 'loss'}=distillation needs teacher scores, and the data gives none; set "
                "data.distillation_file=<their JSON lines file>, or choose loss=contrastive"
            )
