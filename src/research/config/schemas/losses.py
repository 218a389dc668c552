"""Loss functions."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, spec


@dataclass
class CrossEntropy(Schema):
    targets = ("research.losses.cross_entropy.cross_entropy", "torch.nn.CrossEntropyLoss")
    weight: list[float] | None = None
    ignore_index: int = -100
    reduction: str = spec("mean", choices=["mean", "sum", "none"])
    label_smoothing: float = spec(0.0, ge=0.0, le=1.0)
