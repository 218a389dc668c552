"""The shared part of every image-classification datamodule: split, normalise, batch.

Subclasses only say how to load the raw images; the train/val/test split, the normalisation
statistics (taken from the train split alone, so nothing leaks from val/test) and the loaders are
the same for every dataset, which keeps results comparable across datasets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from sklearn.model_selection import train_test_split
from torch.utils.data import TensorDataset

from research.data.base import SplitDataModule
from research.data.configs import ImageDataConfig


@dataclass
class ImageArrays:
    """Raw images as float tensors in [0, 1], NCHW, and long labels; `test` is None when the
    dataset has no official test split (one is then carved out of `train`)."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor | None = None
    test_y: torch.Tensor | None = None


class ImageDataModule(SplitDataModule):
    """Stratified, seeded train/val/test splits of an in-memory image dataset."""

    def __init__(self, config: ImageDataConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = ImageDataConfig.build(config, params)
        self.splits: dict[str, TensorDataset] = {}

    @property
    def pin_memory(self) -> bool:  # type: ignore[override]
        return self.config.pin_memory

    def load(self) -> ImageArrays:
        """Read the raw dataset; subclasses implement it."""
        raise NotImplementedError

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        arrays = self.load()
        x, y = arrays.train_x, arrays.train_y
        indices = torch.arange(len(y))
        if arrays.test_x is None or arrays.test_y is None:
            indices, test_idx = self._split(indices, y, self.config.test_fraction)
            test_x, test_y = x[test_idx], y[test_idx]
        else:
            test_x, test_y = arrays.test_x, arrays.test_y
        train_idx, val_idx = self._split(indices, y[indices], self.config.val_fraction)
        train_x, val_x = x[train_idx], x[val_idx]
        if self.config.normalize:
            mean = train_x.mean(dim=(0, 2, 3), keepdim=True)
            std = train_x.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-6)
            train_x, val_x, test_x = ((t - mean) / std for t in (train_x, val_x, test_x))
        self.splits = {
            "train": TensorDataset(train_x, y[train_idx]),
            "val": TensorDataset(val_x, y[val_idx]),
            "test": TensorDataset(test_x, test_y),
        }

    def _split(
        self, indices: torch.Tensor, labels: torch.Tensor, fraction: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keep, held_out = train_test_split(
            indices.numpy(),
            test_size=fraction,
            random_state=self.config.seed,
            stratify=labels.numpy(),
        )
        return torch.as_tensor(keep), torch.as_tensor(held_out)
