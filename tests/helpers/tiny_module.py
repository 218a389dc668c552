"""The smallest LightningModule that trains: for tests of what happens around a fit (callbacks,
checkpoints, Lightning's internals), not of what it learns."""

from __future__ import annotations

import lightning as L
import torch
from torch import nn


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(2, 1)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)
