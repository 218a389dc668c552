"""torch's cross-entropy, constructible from plain config values."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from research.losses.configs import CrossEntropyConfig


def cross_entropy(config: CrossEntropyConfig | None = None, **params: Any) -> nn.CrossEntropyLoss:
    """`nn.CrossEntropyLoss` whose class weights come as a YAML list instead of a tensor."""
    c = CrossEntropyConfig.build(config, params)
    return nn.CrossEntropyLoss(
        weight=torch.tensor(c.weight, dtype=torch.float32) if c.weight is not None else None,
        ignore_index=c.ignore_index,
        reduction=c.reduction,
        label_smoothing=c.label_smoothing,
    )
