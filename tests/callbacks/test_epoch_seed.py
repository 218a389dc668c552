"""The global RNGs at an epoch's first batch follow (seed, epoch), whatever came before."""

from __future__ import annotations

import random
import traceback
from typing import Any

import lightning as L
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from research.callbacks.epochs import EpochSeed
from research.utils.seeding import derive_seed
from tests.helpers.tiny_module import Tiny

SEED = 7


def _draws() -> tuple[float, float, list[float]]:
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


class _Draws(L.Callback):
    """Draws from each global RNG at the first batch of every epoch, after EpochSeed."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float, list[float]]] = []

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if batch_idx == 0:
            self.seen.append(_draws())


def _fit(epochs: int) -> list[tuple[float, float, list[float]]]:
    draws = _Draws()
    trainer = L.Trainer(
        accelerator="cpu",
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[EpochSeed(SEED), draws],
    )
    trainer.fit(Tiny(), DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4))
    return draws.seen


def _expected(epoch: int) -> tuple[float, float, list[float]]:
    value = derive_seed(SEED, epoch, 0)
    random.seed(value)
    np.random.seed(value)
    torch.manual_seed(value)
    return _draws()


def test_each_epoch_starts_every_global_rng_from_the_seed_and_the_epoch():
    seen = _fit(epochs=3)
    assert seen == [_expected(epoch) for epoch in range(3)]
    assert len({draw[0] for draw in seen}) == 3  # the epochs differ


def test_a_run_on_the_cpu_defers_no_accelerator_seed_with_a_stack_trace(
    monkeypatch: pytest.MonkeyPatch,
):
    """`torch.manual_seed` formats the stack to defer the seed of each accelerator torch was
    built for and has not initialized (three on the pinned CUDA build): 1.7 ms an epoch, for
    generators a CPU run never uses."""
    stacks: list[int] = []
    format_stack = traceback.format_stack
    monkeypatch.setattr(traceback, "format_stack", lambda *a: stacks.append(1) or format_stack(*a))
    _fit(epochs=3)
    assert stacks == []
