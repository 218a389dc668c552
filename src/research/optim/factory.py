"""The optimizer/scheduler wiring every LightningModule here shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

OptimizerFactory = Callable[[Iterable[torch.nn.Parameter]], Optimizer]
SchedulerFactory = Callable[[Optimizer, "int | None"], LRScheduler]


def configure(
    params: Iterable[torch.nn.Parameter],
    optimizer: OptimizerFactory,
    scheduler: SchedulerFactory | None,
    total_steps: int | None,
) -> dict[str, Any]:
    """Build the optimizer and a per-step scheduler in Lightning's return format
    (`total_steps` None: the run has no end, `trainer.max_epochs=-1`).

    Schedules are stepped every optimizer step (not every epoch) so warmup lengths mean the same
    thing whatever the dataset size.
    """
    opt = optimizer(params)
    if scheduler is None:
        return {"optimizer": opt}
    return {
        "optimizer": opt,
        "lr_scheduler": {"scheduler": scheduler(opt, total_steps), "interval": "step"},
    }
