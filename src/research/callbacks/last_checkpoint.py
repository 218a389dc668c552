"""`last.ckpt` rewritten at every save point of a run, whether or not the monitored metric improved.

Since Lightning 2.6, `ModelCheckpoint(save_last=True)` rewrites `last.ckpt` only when it saved a
top-k checkpoint at the same step, so with a monitor `last.ckpt` holds the last epoch that
improved it: a resume redoes the epochs after it, and `research-eval ckpt=last` scores stale
weights. So the configured callback keeps the best checkpoints only, and a second
`ModelCheckpoint` without a monitor, which saves at every point it checks, writes `last.ckpt`.

Where the best checkpoint was saved at the same step, `last.ckpt` is a hard link to that file, as
Lightning's `save_last="link"` points at it: the same training state, without serializing and
writing it twice. The file stays a file of its own name: the next best replaces `best.ckpt`
with a new file and leaves it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from research import compat
from research.tracking.checkpoints import AsyncAtomicCheckpointIO


class LastCheckpoint(compat.lightning_model_checkpoint_with_save_hooks()):  # type: ignore[misc]
    """Writes `<dirpath>/last.ckpt` after every epoch (after every validation when validation
    runs mid-epoch; every `every_n_train_steps` steps when the run saves by steps). It must come
    after the best-checkpoint callback, so `last.ckpt` holds that callback's updated state (its
    best path and score) for a resume."""

    def __init__(
        self,
        dirpath: str,
        save_on_train_epoch_end: bool | None = None,
        every_n_train_steps: int | None = None,
        save_weights_only: bool = False,
    ) -> None:
        super().__init__(
            dirpath=dirpath,
            filename=self.CHECKPOINT_NAME_LAST,
            monitor=None,
            save_top_k=1,
            save_weights_only=save_weights_only,
            every_n_train_steps=every_n_train_steps or None,
            every_n_epochs=None if every_n_train_steps else 1,
            save_on_train_epoch_end=save_on_train_epoch_end,
            # One fixed file: never `last-v1.ckpt` beside the previous run's `last.ckpt`.
            enable_version_counter=False,
        )

    def save_point_metrics(
        self, trainer: L.Trainer, metrics: Callable[[], dict[str, torch.Tensor]]
    ) -> dict[str, torch.Tensor]:
        """The epoch and step only: `last.ckpt` monitors nothing and its name holds no metric,
        while Lightning's `metrics()` deep-copies every logged metric at every save point (0.9 ms
        an epoch in a default run, 8 metrics)."""
        return {
            "epoch": torch.tensor(trainer.current_epoch),
            "step": torch.tensor(trainer.global_step),
        }

    def save_file(self, trainer: L.Trainer, filepath: str, save: Callable[[], None]) -> None:
        """Lightning's save, linked to the file another checkpoint callback saved at this step
        (see the module's docstring); Lightning's bookkeeping after a save is unchanged."""
        writer = trainer.strategy.checkpoint_io
        source = self._saved_at_this_step(trainer)
        if source is None or not isinstance(writer, AsyncAtomicCheckpointIO):
            save()
            return
        with writer.same_state_as(source):
            save()

    def _saved_at_this_step(self, trainer: L.Trainer) -> str | None:
        """The file a checkpoint callback before this one saved at the current step, of the same
        kind (whole or weights only)."""
        for callback in trainer.checkpoint_callbacks:
            if callback is self:
                return None
            if isinstance(callback, ModelCheckpoint):
                step, path = compat.lightning_checkpoint_saved_last(callback)
                if (
                    step == trainer.global_step
                    and path
                    and callback.save_weights_only == self.save_weights_only
                ):
                    return path
        return None


def split_last(node: dict[str, Any]) -> tuple[dict[str, Any], LastCheckpoint | None]:
    """A ModelCheckpoint config node without `save_last`, and the `LastCheckpoint` that takes
    its place (None when it asks for no `last.ckpt`). `save_last: link` gets a file too: a link
    points at a top-k file, which holds the last improving epoch, not the last one."""
    if not node.get("save_last"):
        return node, None
    last = LastCheckpoint(
        dirpath=node["dirpath"],
        save_on_train_epoch_end=node.get("save_on_train_epoch_end"),
        every_n_train_steps=node.get("every_n_train_steps"),
        save_weights_only=bool(node.get("save_weights_only", False)),
    )
    return {**node, "save_last": False}, last
