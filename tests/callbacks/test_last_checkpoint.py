"""`last.ckpt` at a step where the best checkpoint was saved is that file under a second name."""

from __future__ import annotations

import copy
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint, model_checkpoint
from torch.utils.data import DataLoader, TensorDataset

from research.callbacks.last_checkpoint import LastCheckpoint
from research.tracking.checkpoints import AsyncAtomicCheckpointIO, read_checkpoint
from tests.helpers.tiny_module import Tiny

# The monitored value of each epoch: new bests at epochs 0, 1 and 3, none at 2.
SCORES = [0.1, 0.3, 0.2, 0.4]


class _Scripted(Tiny):
    def on_train_epoch_end(self) -> None:
        self.log("score", SCORES[self.current_epoch])


class _Files(L.Callback):
    """After each epoch's checkpoints are written: whether last.ckpt and best.ckpt are one file,
    and the epoch last.ckpt holds."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seen: list[tuple[bool, int]] = []

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.current_epoch > 0:
            self._look(trainer)

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._look(trainer)

    def _look(self, trainer: L.Trainer) -> None:
        trainer.strategy.checkpoint_io.wait()
        last, best = self.folder / "last.ckpt", self.folder / "best.ckpt"
        self.seen.append((last.samefile(best), read_checkpoint(last)["epoch"]))


def _fit(folder: Path, epochs: int, resume: Path | None = None) -> _Files:
    files = _Files(folder)
    best = ModelCheckpoint(
        dirpath=folder, filename="best", monitor="score", mode="max", save_on_train_epoch_end=True
    )
    trainer = L.Trainer(
        max_epochs=epochs,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[files, best, LastCheckpoint(str(folder), save_on_train_epoch_end=True)],
        plugins=[AsyncAtomicCheckpointIO()],
    )
    data = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    trainer.fit(_Scripted(), data, ckpt_path=str(resume) if resume else None)
    return files


def test_last_is_the_best_file_exactly_at_the_epochs_that_saved_a_best(tmp_path: Path):
    files = _fit(tmp_path, epochs=4)
    assert files.seen == [(True, 0), (True, 1), (False, 2), (True, 3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.ckpt", "last.ckpt"]


def test_a_new_best_leaves_the_linked_last_checkpoint_as_it_was(tmp_path: Path):
    _fit(tmp_path, epochs=2)  # epoch 1: best and last one file
    assert (tmp_path / "last.ckpt").samefile(tmp_path / "best.ckpt")
    linked = read_checkpoint(tmp_path / "last.ckpt")
    (tmp_path / "best.ckpt").unlink()  # what a replacing write does to the old name
    assert read_checkpoint(tmp_path / "last.ckpt")["global_step"] == linked["global_step"] == 4


def test_a_run_resumes_from_a_linked_last_checkpoint(tmp_path: Path):
    _fit(tmp_path, epochs=2)
    files = _fit(tmp_path, epochs=4, resume=tmp_path / "last.ckpt")
    assert files.seen == [(True, 1), (False, 2), (True, 3)]  # the first look is before epoch 2
    assert read_checkpoint(tmp_path / "last.ckpt")["global_step"] == 8


def test_only_the_best_checkpoint_copies_the_logged_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Lightning's ModelCheckpoint deep-copies every logged metric at each save point (0.9 ms
    an epoch in a default run); `last.ckpt` monitors none and names none."""
    copies: list[int] = []
    monkeypatch.setattr(
        model_checkpoint, "deepcopy", lambda value: copies.append(1) or copy.deepcopy(value)
    )
    files = _fit(tmp_path, epochs=4)
    assert files.seen == [(True, 0), (True, 1), (False, 2), (True, 3)]
    assert len(copies) == 4  # the best checkpoint's callback, once an epoch
