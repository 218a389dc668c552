"""Associative recall, generated from a seed: exact, free, and hard in a controlled way."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

from research.data.base import SplitDataModule
from research.data.configs import AssociativeRecallConfig

PAD = 0


class RecallDataset(Dataset):
    """Associative recall: `k1 v1 k2 v2 ... kn vn q` -> the value stored under key q.

    Keys are tokens 1..num_keys, values num_keys+1..num_keys+num_values; keys within one
    sequence are distinct, so the answer is unique and needs attention from q back to its key.
    """

    def __init__(self, size: int, num_pairs: int, num_keys: int, num_values: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        keys = torch.argsort(torch.rand(size, num_keys, generator=generator), dim=1)[:, :num_pairs]
        keys = keys + 1
        values = torch.randint(0, num_values, (size, num_pairs), generator=generator)
        asked = torch.randint(0, num_pairs, (size,), generator=generator)
        pairs = torch.stack([keys, values + num_keys + 1], dim=2).flatten(1)
        query = keys[torch.arange(size), asked].unsqueeze(1)
        self.input_ids = torch.cat([pairs, query], dim=1)
        self.labels = values[torch.arange(size), asked]

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        ids = self.input_ids[index]
        return {"input_ids": ids, "attention_mask": ids != PAD, "labels": self.labels[index]}


class AssociativeRecallDataModule(SplitDataModule):
    """Train/val/test sets drawn from disjoint seeds derived from `seed`.

    `eval_num_pairs` adds validation and test sets with more pairs than training used (longer
    sequences), reported as `val/acc@<tokens>`: how well the model extrapolates in length.
    """

    def __init__(self, config: AssociativeRecallConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = AssociativeRecallConfig.build(config, params)
        self.eval_num_pairs = list(self.config.eval_num_pairs or [])
        self.eval_suffixes = ["", *(f"@{2 * p + 1}" for p in self.eval_num_pairs)]
        self.sizes = {
            "train": self.config.train_size,
            "val": self.config.val_size,
            "test": self.config.test_size,
        }
        self.vocab_size = 1 + self.config.num_keys + self.config.num_values
        self.num_classes = self.config.num_values
        self.splits: dict[str, RecallDataset] = {}

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        self.splits["train"] = self._dataset(self.sizes["train"], self.config.num_pairs, 0)
        for offset, split in enumerate(("val", "test"), start=1):
            pairs = [self.config.num_pairs, *self.eval_num_pairs]
            sets = [
                self._dataset(self.sizes[split], p, offset + 2 * i) for i, p in enumerate(pairs)
            ]
            self.splits[split] = sets if len(sets) > 1 else sets[0]

    def _dataset(self, size: int, num_pairs: int, offset: int) -> RecallDataset:
        seed = self.config.seed * 101 + offset  # a distinct stream per split and length
        return RecallDataset(size, num_pairs, self.config.num_keys, self.config.num_values, seed)
