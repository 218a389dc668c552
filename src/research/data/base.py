"""The base class of every datamodule here: its loaders, with seeded per-epoch shuffling for
train only and worker processes that die with the run (research.data.workers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning as L
from torch.utils.data import DataLoader, Dataset

from research.data.configs import LoaderConfig
from research.data.samplers import EpochSeededSampler
from research.data.tensor_batches import batched
from research.data.workers import worker_init


class SplitDataModule(L.LightningDataModule):
    """A datamodule whose `setup` fills `self.splits` with train/val/test datasets.

    A val or test entry may be a list of datasets (e.g. one per sequence length): it becomes one
    loader each, named by `eval_suffixes` ("" for the first). Subclasses set `config` (the
    loaders read its `batch_size`, `num_workers` and `seed`); `collate_fn` and `pin_memory` are
    optional. A plain `TensorDataset` under the default collation is read a batch at a time
    (research.data.tensor_batches).
    """

    config: LoaderConfig
    splits: dict[str, Dataset | list[Dataset]]
    eval_suffixes: list[str] | None = None
    pin_memory: bool = False
    collate_fn: Callable[[list[Any]], Any] | None = None

    def _loader(self, split: str) -> DataLoader | list[DataLoader]:
        if isinstance(self.splits[split], list):
            return [self._one_loader(split, dataset) for dataset in self.splits[split]]
        return self._one_loader(split, self.splits[split])

    def _one_loader(
        self, split: str, dataset: Dataset, batch_size: int | None = None
    ) -> DataLoader:
        config = self.config
        sampler = EpochSeededSampler(len(dataset), config.seed) if split == "train" else None
        dataset, collate_fn = batched(dataset, self.collate_fn)
        return DataLoader(
            dataset,
            batch_size=batch_size or config.batch_size,
            sampler=sampler,
            num_workers=config.num_workers,
            pin_memory=self.pin_memory,
            persistent_workers=config.num_workers > 0,
            collate_fn=collate_fn,
            worker_init_fn=worker_init,
        )

    def train_dataloader(self) -> DataLoader:
        return self._one_loader("train", self.splits["train"])

    def val_dataloader(self) -> DataLoader | list[DataLoader]:
        return self._loader("val")

    def test_dataloader(self) -> DataLoader | list[DataLoader]:
        return self._loader("test")
