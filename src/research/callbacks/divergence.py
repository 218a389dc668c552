"""Stop a run at the first non-finite training loss: status `diverged`, not hours on garbage."""

from __future__ import annotations

import math
from typing import Any

import lightning as L
import torch


class DivergedError(RuntimeError):
    """The training loss became NaN or infinite; the run stops with status `diverged`."""


class DivergenceGuard(L.Callback):
    """Stops the run at the first non-finite training loss instead of training on garbage."""

    def on_train_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if not isinstance(loss, torch.Tensor):
            return
        # A scalar (every automatic-optimization loss) is read once: a fifth of a microsecond on
        # the CPU against ~7 for `torch.isfinite(loss).all()`; on a GPU either waits for the step.
        if loss.numel() == 1:
            value = loss.item()
            if math.isfinite(value):
                return
        elif torch.isfinite(loss).all():
            return
        else:
            value = "non-finite"
        raise DivergedError(
            f"train/loss became {value} at epoch {trainer.current_epoch}, step "
            f"{trainer.global_step}; lower optimizer.lr, add warmup or gradient clipping"
        )
