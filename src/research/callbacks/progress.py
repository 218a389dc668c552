"""Training progress as log lines, for runs nobody watches in a terminal.

A SLURM job's `.out` file, `nohup` or CI gets no useful progress bar; this callback logs a line
every `every_n_steps` optimizer steps or `every_s` seconds (whichever comes first) with the
epoch, step/total, training loss, throughput and ETA, and the validation metrics after each
validation. It goes through Python logging, so it reaches the console and the job's log file.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from typing import Any

import lightning as L
import torch

from research.callbacks.configs import ProgressLogConfig

log = logging.getLogger(__name__)


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _number(value: Any) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    return float(value) if isinstance(value, int | float) else None


def _on_terminal() -> bool:
    """Whether stdout is a terminal; a missing or closed one (`>&-`, an embedding host) is not."""
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (OSError, ValueError):
        return False


class ProgressLog(L.Callback):
    """Logs progress lines (rank zero) when stdout is not a terminal, or always with `always`."""

    def __init__(self, config: ProgressLogConfig | None = None, **params: Any) -> None:
        self.config = ProgressLogConfig.build(config, params)
        self.active = False

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.active = trainer.is_global_zero and (self.config.always or not _on_terminal())
        self.start_time = self.last_time = time.monotonic()
        self.start_step = self.last_step = trainer.global_step

    def on_train_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        if not self.active:
            return
        now, step = time.monotonic(), trainer.global_step
        due = step - self.last_step >= self.config.every_n_steps
        if not due and now - self.last_time < self.config.every_s:
            return
        self.last_time, self.last_step = now, step
        rate = (step - self.start_step) / max(now - self.start_time, 1e-9)
        total = trainer.estimated_stepping_batches
        eta = (total - step) / rate if rate > 0 and math.isfinite(total) else math.inf
        loss = _number(outputs.get("loss") if isinstance(outputs, dict) else outputs)
        log.info(
            "epoch %d  step %d/%s  loss %s  %.1f steps/s  ETA %s",
            trainer.current_epoch,
            step,
            int(total) if math.isfinite(total) else "?",
            f"{loss:.4f}" if loss is not None else "?",
            rate,
            _duration(eta),
        )

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not self.active or trainer.sanity_checking:
            return
        values = {
            name: number
            for name, value in sorted(trainer.callback_metrics.items())
            if name.startswith("val/") and (number := _number(value)) is not None
        }
        shown = "  ".join(f"{name}={value:.4f}" for name, value in values.items())
        log.info(
            "validation  epoch %d  step %d  %s", trainer.current_epoch, trainer.global_step, shown
        )
