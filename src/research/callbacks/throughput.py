"""Training throughput and model FLOPs utilization, logged like any other metric.

Built on Lightning's `Throughput` (lightning.fabric.utilities.throughput), which turns running
totals into rates and MFU, and its table of GPUs' peak FLOP/s (`get_available_flops`). Logged
every `trainer.log_every_n_steps` optimizer steps over the steps since the last log (to every
logger), and per epoch over the whole epoch (`<name>_epoch` in the loggers; the history row and
metrics.json's `final` hold it under `<name>`):

- `throughput/samples_per_s`: samples per second of training, all devices together.
- `throughput/tokens_per_s`: tokens per second when batches are dicts with `input_ids` (the
  `attention_mask`'s real tokens when there is one, every id otherwise).
- `throughput/flops_per_step`: FLOPs of one optimizer step on all devices, counted (not
  estimated) by torch's FlopCounterMode, as Lightning's `measure_flops` does, while the first
  training batch runs: forward, loss and backward at that batch's shapes (matrix products,
  convolutions and attention; activation checkpointing's recomputation included). Later batches
  count as that one.
- `throughput/flops_per_s`: that times optimizer steps per second.
- `throughput/mfu`: FLOP/s per device over the device's peak (`peak_flops`, else Lightning's
  table for the GPU at the trainer's precision, with the H200 added); absent when no peak is
  known (CPU).

Samples are counted by the module's `batch_samples(batch)` where it has one (every `Task`: a
retrieval batch of texts counts its queries), else by Lightning's `extract_batch_size`.
Times are training only (validation excluded) and rank zero's; devices are assumed alike.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

import lightning as L
import torch
from lightning.fabric.utilities.throughput import Throughput, get_available_flops
from lightning.pytorch.utilities.data import extract_batch_size
from torch.utils.flop_counter import FlopCounterMode

from research import compat
from research.callbacks.configs import ThroughputConfig

PREFIX = "throughput/"
# Lightning's metric names -> ours. Device rates are rank zero's; global ones are `* world_size`.
_DEVICE_RATES = {
    "device/samples_per_sec": "samples_per_s",
    "device/items_per_sec": "tokens_per_s",
    "device/flops_per_sec": "flops_per_s",
}
_COMPUTE_DTYPES = {"64": torch.float64, "bf16": torch.bfloat16, "16": torch.float16}


def compute_dtype(precision: str) -> torch.dtype:
    """The dtype matrix products run in under a Trainer `precision` ("bf16-mixed", "32-true")."""
    return _COMPUTE_DTYPES.get(str(precision).split("-")[0], torch.float32)


def batch_tokens(batch: Any) -> torch.Tensor | int | None:
    """The tokens in a batch (a mask's sum stays a device tensor, read only when logging, so
    counting never waits on the GPU); None when the batch holds no `input_ids`."""
    if not isinstance(batch, dict) or not isinstance(batch.get("input_ids"), torch.Tensor):
        return None
    mask = batch.get("attention_mask")
    if isinstance(mask, torch.Tensor):
        return mask.sum()
    return batch["input_ids"].numel()


class _Totals:
    """Running totals of training since `on_train_start`, with a clock that stops during
    validation."""

    def __init__(self) -> None:
        self.batches, self.samples = 0, 0
        self.tokens: torch.Tensor | int | None = None
        self.seconds, self.since = 0.0, time.perf_counter()

    def token_count(self) -> int | None:
        """Tokens so far; None once batches have shown they hold none (0 before the first)."""
        if self.tokens is None:
            return None if self.batches else 0
        return int(self.tokens)

    def pause(self) -> None:
        self.seconds, self.since = self.elapsed(), None

    def resume(self) -> None:
        self.since = time.perf_counter()

    def elapsed(self) -> float:
        return self.seconds + (time.perf_counter() - self.since if self.since is not None else 0.0)


# GPUs whose torch name Lightning 2.6 reads as no chip of its table -> the chip they are. torch
# calls an H200 (SXM) "NVIDIA H200"; it is the H100 SXM's GH100 at the same clocks (NVIDIA's
# datasheets give the same peaks). Lightning's own "h200 sxm1" row holds the with-sparsity peaks,
# twice the dense ones of every other row.
SAME_CHIP = {"NVIDIA H200": "h100 sxm"}


def device_peak_flops(device: torch.device, dtype: torch.dtype) -> float | None:
    """A device's peak FLOP/s at `dtype`: Lightning's table, with SAME_CHIP's GPUs read as the
    chip they are. float32 counts as TF32 where torch's matmul precision allows it, as in
    Lightning's lookup."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    if name in SAME_CHIP:
        tf32 = dtype is torch.float32 and torch.get_float32_matmul_precision() != "highest"
        return compat.lightning_cuda_peak_flops(SAME_CHIP[name]).get("tfloat32" if tf32 else dtype)
    return get_available_flops(device, dtype)


class ThroughputLog(L.Callback):
    """Logs samples/s, tokens/s, FLOPs per step, FLOP/s and MFU of training (see the module)."""

    def __init__(self, config: ThroughputConfig | None = None, **params: Any) -> None:
        self.config = ThroughputConfig.build(config, params)
        self.flops_per_batch: int | None = None
        self.totals: _Totals | None = None
        self._counter: FlopCounterMode | None = None
        self._counting = ExitStack()

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        dtype = compute_dtype(trainer.precision)
        peak = self.config.peak_flops or device_peak_flops(trainer.strategy.root_device, dtype)
        self.world_size = trainer.world_size
        # Per window ("" a log interval, "_epoch" an epoch): rates between its last two points.
        self.meters = {
            suffix: Throughput(available_flops=peak or None, window_size=2)
            for suffix in ("", "_epoch")
        }
        self.batches_at = {suffix: 0 for suffix in self.meters}

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.totals = _Totals()
        self.logged_step = trainer.global_step
        self._update(trainer, "")

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.meters["_epoch"].reset()
        self._update(trainer, "_epoch")

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self.config.count_flops and self.flops_per_batch is None and self._counter is None:
            # Dynamo will not trace a frame under a dispatch mode such as FlopCounterMode, and
            # torch before the fix of pytorch/pytorch#190286 (seen with 2.6, 2.11 and 2.13)
            # then skips that code object for good: a compiled run trained eager throughout.
            # Under the `force_eager` stance dynamo does not look at the frame at all.
            self._counting.enter_context(torch.compiler.set_stance("force_eager"))
            self._counter = self._counting.enter_context(FlopCounterMode(display=False))

    def on_train_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        self._stop_counting()
        totals = self.totals
        assert totals is not None
        totals.batches += 1
        # A task knows its batches (`Task.batch_samples`); any other module, Lightning's guess.
        totals.samples += getattr(pl_module, "batch_samples", extract_batch_size)(batch)
        tokens = batch_tokens(batch)
        if tokens is not None:
            totals.tokens = tokens if totals.tokens is None else totals.tokens + tokens
        # The steps Lightning writes to the loggers (`log_every_n_steps`), once per step.
        step = trainer.global_step
        if step % trainer.log_every_n_steps == 0 and step != self.logged_step:
            self.logged_step = step
            self._update(trainer, "")
            self._log(trainer, pl_module, "")

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.totals is not None and not trainer.sanity_checking:
            self.totals.pause()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.totals is not None and not trainer.sanity_checking:
            self.totals.resume()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._update(trainer, "_epoch")
        self._log(trainer, pl_module, "_epoch")

    def on_exception(
        self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException
    ) -> None:
        self._stop_counting()

    def _stop_counting(self) -> None:
        if self._counter is not None:
            counter, self._counter = self._counter, None
            self._counting.close()
            self.flops_per_batch = counter.get_total_flops() or None

    def _update(self, trainer: L.Trainer, suffix: str) -> None:
        """A point of the totals, once the device has finished the work queued so far."""
        if trainer.strategy.root_device.type == "cuda":
            torch.cuda.synchronize()
        totals = self.totals
        assert totals is not None
        # Throughput wants the FLOPs since the window's previous point (the first one's unused).
        batches = totals.batches - self.batches_at[suffix]
        self.batches_at[suffix] = totals.batches
        self.meters[suffix].update(
            time=totals.elapsed(),
            batches=totals.batches,
            samples=totals.samples,
            lengths=totals.token_count(),
            flops=(self.flops_per_batch or 0) * batches if self.config.count_flops else None,
        )

    def _log(self, trainer: L.Trainer, pl_module: L.LightningModule, suffix: str) -> None:
        computed = self.meters[suffix].compute()
        values = {
            ours: computed[k] * self.world_size
            for k, ours in _DEVICE_RATES.items()
            if k in computed
        }
        if self.flops_per_batch:
            steps = trainer.accumulate_grad_batches * self.world_size
            values["flops_per_step"] = float(self.flops_per_batch * steps)
            if "device/mfu" in computed:
                values["mfu"] = computed["device/mfu"]
        else:
            values.pop("flops_per_s", None)
        for name, value in values.items():
            pl_module.log(
                f"{PREFIX}{name}{suffix}", float(value), on_step=not suffix, on_epoch=bool(suffix)
            )
