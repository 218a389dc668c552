"""A per-epoch mean kept as a tensor on the device and a count on the host: what a step affords.

A torchmetrics update validates, dispatches and copies metric state on every call, which shows
in a small model's step of a few milliseconds (docs: benchmarks, "Framework overhead"). An
in-place add costs a fraction of that; the reduction over ranks happens once, when the epoch's
value is read.
"""

from __future__ import annotations

import torch
from lightning.pytorch.strategies import Strategy


class RunningMean:
    """The mean of the totals added since the last `reset`, over every rank: sum of totals over
    sum of counts (a batch's loss with count 1 gives the mean over batches; its number of correct
    predictions with the batch size gives accuracy)."""

    def __init__(self) -> None:
        self.total: torch.Tensor | None = None
        self.count = 0.0  # on the host: the counts are known there, no device op to add them

    def update(self, total: torch.Tensor, count: float = 1.0) -> None:
        """Add `total` (a scalar tensor, detached here) and `count`, without a host sync."""
        total = total.detach().float()
        # A copy first: the caller's tensor (a view of the loss) must never be added to.
        self.total = total.clone() if self.total is None else self.total.add_(total)
        self.count += count

    def compute(self, strategy: Strategy) -> torch.Tensor:
        """The mean over every rank (one all-reduce of the sum and the count); NaN when nothing
        was added on any rank, as torchmetrics' MeanMetric gives."""
        device = strategy.root_device
        total = self.total.to(device) if self.total is not None else torch.zeros((), device=device)
        pair = torch.stack([total, torch.tensor(self.count, device=device)])
        pair = strategy.reduce(pair, reduce_op="sum")
        return pair[0] / pair[1]

    def reset(self) -> None:
        self.total, self.count = None, 0.0
