"""Per-epoch callbacks every training run gets: the RNGs reseeded from (seed, epoch), and one
history row per epoch."""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch

from research.tracking.run_dir import HISTORY_FILE, read_history
from research.utils.atomic import write_atomic
from research.utils.seeding import derive_seed


class EpochSeed(L.Callback):
    """Reseeds the global RNGs from (seed, epoch) just before the first batch of every epoch.

    Lightning checkpoints do not hold the global RNG states, so without this a run resumed from
    an epoch-end checkpoint would draw different dropout masks than the uninterrupted run. It is
    the first batch, not the epoch start, because creating a DataLoader iterator draws from the
    global RNG, and Lightning creates it at a different moment when it resumes.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if batch_idx != 0:
            return
        value = derive_seed(self.seed, trainer.current_epoch, trainer.global_rank)
        random.seed(value)
        np.random.seed(value)
        _seed_torch(value, pl_module.device)


def _seed_torch(value: int, device: torch.device) -> None:
    """`torch.manual_seed` where the run is on an accelerator; the CPU generator alone where it
    is on the CPU.

    `torch.manual_seed` also seeds every accelerator torch was built for, and one not yet
    initialized gets its seed deferred with a formatted stack trace (CUDA, XPU and MTIA on the
    pinned CUDA build): 1.7 ms an epoch in a default run, for generators a run on the CPU never
    uses.
    """
    if device.type == "cpu":
        torch.default_generator.manual_seed(value)
    else:
        torch.manual_seed(value)


def _scalar(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _scalars(trainer: L.Trainer) -> dict[str, float]:
    """The finite scalar metrics logged so far; an epoch aggregate (`x_epoch`) wins over the last
    step value logged as `x`."""
    metrics = sorted(trainer.callback_metrics.items(), key=lambda kv: kv[0].endswith("_epoch"))
    row: dict[str, float] = {}
    for name, value in metrics:
        number = _scalar(value)
        if number is not None and not name.endswith("_step"):
            row[name.removesuffix("_epoch")] = number
    return row


class EpochHistory(L.Callback):
    """Appends one row of epoch-level metrics per epoch to `history.jsonl` (rank zero only).

    The row of epoch e is written when epoch e's checkpoint is saved (by then the module has
    logged all of that epoch's metrics, and the row reaches disk before the checkpoint), or at
    the start of the next epoch / the end of training when nothing is checkpointed. So a run
    killed at any moment has a row for every epoch its last checkpoint holds; on resume, rows of
    epochs that will be redone are dropped.
    """

    def __init__(self, run_dir: Path, carry_from: Path | None = None, resume_epoch: int = 0):
        self.path = run_dir / HISTORY_FILE
        source = carry_from or run_dir
        self.rows = [r for r in read_history(source) if r.get("epoch", 0) < resume_epoch]
        self.ended_epoch = -1  # the last epoch whose training part has finished
        # Metrics after every validation of this fit, mid-epoch ones included
        # (`trainer.val_check_interval` < 1): the best checkpoint may come from any of them.
        self.validations: list[dict[str, Any]] = []

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.start = time.perf_counter()
        if trainer.is_global_zero:
            # Rewritten whole (a resume drops the rows it redoes): never left half-written.
            write_atomic(self.path, "".join(json.dumps(r) + "\n" for r in self.rows))

    def _commit(self, trainer: L.Trainer, epoch: int) -> None:
        if not trainer.is_global_zero or epoch < 0 or trainer.sanity_checking:
            return
        if self.rows and self.rows[-1].get("epoch", -1) >= epoch:
            return
        row: dict[str, Any] = {
            "epoch": epoch,
            "step": trainer.global_step,
            "time_s": round(time.perf_counter() - self.start, 4),  # since this fit started
            **_scalars(trainer),
        }
        self.rows.append(row)
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.ended_epoch = trainer.current_epoch

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.is_global_zero and not trainer.sanity_checking:
            row = {"epoch": trainer.current_epoch, "step": trainer.global_step}
            self.validations.append({**row, **_scalars(trainer)})

    def on_save_checkpoint(
        self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        self._commit(trainer, self.ended_epoch)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._commit(trainer, self.ended_epoch)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._commit(trainer, self.ended_epoch)
