"""The parameters of every loss here, declared once and torch-free."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, spec


@dataclass
class CrossEntropyConfig(Schema):
    targets = ("research.losses.cross_entropy.cross_entropy", "torch.nn.CrossEntropyLoss")
    weight: list[float] | None = None
    ignore_index: int = -100
    reduction: str = spec("mean", choices=["mean", "sum", "none"])
    label_smoothing: float = spec(0.0, ge=0.0, le=1.0)


@dataclass
class ContrastiveConfig(Schema):
    targets = ("research.losses.contrastive.Contrastive",)
    # Divides MaxSim sums (up to the query length). 1.0 is colbert-ai's plain cross-entropy on
    # them; the 0.02 of other recipes divides scores averaged over query tokens, and on sums it
    # made training unstable here (experiments/colbert_stdlib).
    temperature: float = spec(1.0, gt=0.0)
    # Mean over the batch (true) or sum (false).
    size_average: bool = True
    # Under DDP, score against the documents of every rank.
    gather_across_devices: bool = True


@dataclass
class DistillationConfig(Schema):
    targets = ("research.losses.distillation.Distillation",)
    temperature: float = spec(1.0, gt=0.0)
