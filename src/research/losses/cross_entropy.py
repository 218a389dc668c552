"""torch's cross-entropy, constructible from plain config values."""

from __future__ import annotations

import torch
from torch import nn


def cross_entropy(
    weight: list[float] | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> nn.CrossEntropyLoss:
    """`nn.CrossEntropyLoss` whose class weights come as a YAML list instead of a tensor."""
    return nn.CrossEntropyLoss(
        weight=torch.tensor(weight, dtype=torch.float32) if weight is not None else None,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )
