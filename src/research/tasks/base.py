"""What every task shares: a network, a loss, and the optimizer/scheduler built from config."""

from __future__ import annotations

import math
from typing import Any

import lightning as L
import torch
from lightning.pytorch.utilities.data import extract_batch_size
from torch import nn

from research.optim.factory import OptimizerFactory, SchedulerFactory, configure
from research.tasks.compile import compile_net
from research.tasks.configs import TaskConfig


class Task(L.LightningModule):
    """Holds `net` and `loss`, builds the configured optimizer and per-step scheduler, and logs
    `train/loss` every `log_every_n_steps` (a `self.log` call per step costs ~0.5 ms, and
    Lightning writes only every n steps anyway).

    Every task takes its parts in this order, (net, loss, optimizer, scheduler), then its own
    declaration (`config` or its fields as keywords); a task with a natural loss of its own
    (the language models) accepts `loss=None` for it."""

    def __init__(
        self,
        net: nn.Module,
        loss: nn.Module,
        optimizer: OptimizerFactory,
        scheduler: SchedulerFactory | None = None,
    ) -> None:
        super().__init__()
        self.net, self.loss = net, loss
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.net_compiled = False

    def configure_model(self) -> None:
        """With `compile=true`, compile the network in place for the device the trainer runs
        on. Lightning calls this hook in each rank (after a spawn sent the module there) and
        again in each of fit, validate and test: it compiles once."""
        config: TaskConfig = self.config  # type: ignore[assignment]  # set by each task
        if config.compile and not self.net_compiled:
            compile_net(self.net, config.compile_mode, self.trainer.strategy.root_device)
            self.net_compiled = True

    def log_train_loss(self, loss: torch.Tensor, batch_size: int | None = None) -> None:
        if (self.global_step + 1) % self.trainer.log_every_n_steps == 0:
            self.log(
                "train/loss",
                loss.detach(),
                on_step=True,
                on_epoch=False,
                prog_bar=True,
                batch_size=batch_size,
            )

    def batch_samples(self, batch: Any) -> int:
        """Samples in a training batch, for throughput (`callbacks=throughput`): Lightning's
        reading of its tensors' first dimension; a task whose batches hold no tensors says."""
        return extract_batch_size(batch)

    def configure_optimizers(self) -> dict[str, Any]:
        steps = self.trainer.estimated_stepping_batches  # inf for max_epochs=-1
        return configure(
            self.parameters(),
            self.optimizer_factory,
            self.scheduler_factory,
            int(steps) if math.isfinite(steps) else None,
        )
