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
    # 0.02: the temperature of the ColBERT fine-tuning recipes this loss is compared against
    # (PyLate's, issue 16); 1.0 was the placeholder of a generic cross-entropy.
    temperature: float = spec(0.02, gt=0.0)
    # Mean over the batch (true) or sum (false).
    size_average: bool = True
    # Under DDP, score against the documents of every rank.
    gather_across_devices: bool = True


@dataclass
class DistillationConfig(Schema):
    targets = ("research.losses.distillation.Distillation",)
    temperature: float = spec(1.0, gt=0.0)
