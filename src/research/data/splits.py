"""The loaders every datamodule here shares: seeded per-epoch shuffling for train only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning as L
from torch.utils.data import DataLoader, Dataset

from research.data.samplers import EpochSeededSampler


class SplitDataModule(L.LightningDataModule):
    """A datamodule whose `setup` fills `self.splits` with train/val/test datasets.

    Subclasses set `batch_size`, `num_workers` and `seed`; `collate_fn` and `pin_memory` are
    optional class or instance attributes.
    """

    splits: dict[str, Dataset]
    batch_size: int
    num_workers: int
    seed: int
    pin_memory: bool = False
    collate_fn: Callable[[list[Any]], Any] | None = None

    def _loader(self, split: str) -> DataLoader:
        dataset = self.splits[split]
        sampler = EpochSeededSampler(len(dataset), self.seed) if split == "train" else None
        return DataLoader(
            dataset,
            batch_size=self.batch_size,
            sampler=sampler,
            num_workers=self.num_workers,
            pin_memory=self.pin_memory,
            persistent_workers=self.num_workers > 0,
            collate_fn=self.collate_fn,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train")

    def val_dataloader(self) -> DataLoader:
        return self._loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._loader("test")
