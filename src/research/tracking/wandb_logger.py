"""Lightning's W&B logger, writing one W&B row per training step instead of one per log call.

Lightning logs a step's values in several calls: the learning-rate monitor's, then the step's train
loss; at an epoch's end the validation metrics, then the train epoch's. Each call is a `wandb.log`,
a round trip to W&B's service thread and process, dearest on a CPU that torch keeps busy: in
`benchmarks/wandb_rows.py` (2 cores) a logging step's two calls added 2.8 ms to the step, one call
of both 1.5 ms (0.9 and 0.2 ms with the CPU idle). Values of the same step are held and written in
one call when a later step arrives, or when the run ends; the plots are the same (W&B plots against
`trainer/global_step`). A value held when the process is killed is lost with it, as is whatever
W&B's service had not yet written (`settings.x_transaction_log_flush_interval`, 2 s in
conf/logger/wandb.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger
from lightning.pytorch.utilities import rank_zero_only


class WandbLogger(LightningWandbLogger):
    """`lightning.pytorch.loggers.WandbLogger` whose log calls of one step make one W&B row. It
    takes Lightning's parameters unchanged (declared in research.config.schemas.lightning)."""

    _held: dict[str, Any] | None = None  # the values logged at `_held_step`, not yet written
    _held_step: int | None = None

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        if step is None:  # no step to merge on: a row of its own, after what is held
            self.flush()
            super().log_metrics(metrics, step)
            return
        if self._held and step != self._held_step:
            self.flush()
        self._held = {**(self._held or {}), **metrics}
        self._held_step = step

    @rank_zero_only
    def flush(self) -> None:
        """Write the held step's row now."""
        if self._held:
            held, self._held = self._held, None
            super().log_metrics(held, self._held_step)

    @rank_zero_only
    def finalize(self, status: str) -> None:
        self.flush()
        super().finalize(status)
