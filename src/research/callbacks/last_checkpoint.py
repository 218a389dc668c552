"""`last.ckpt` rewritten at every save point of a run, whether or not the monitored metric improved.

Since Lightning 2.6, `ModelCheckpoint(save_last=True)` rewrites `last.ckpt` only when it saved a
top-k checkpoint at the same step, so with a monitor `last.ckpt` holds the last epoch that
improved it: a resume redoes the epochs after it, and `research-eval ckpt=last` scores stale
weights. So the configured callback keeps the best checkpoints only, and a second
`ModelCheckpoint` without a monitor, which saves at every point it checks, writes `last.ckpt`.
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch.callbacks import ModelCheckpoint


class LastCheckpoint(ModelCheckpoint):
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
