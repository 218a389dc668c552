"""Synthetic sequence tasks generated from a seed: exact, free, and hard in controlled ways."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from research.data.splits import SplitDataModule

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

    def __init__(
        self,
        num_pairs: int = 8,
        num_keys: int = 32,
        num_values: int = 16,
        train_size: int = 4000,
        val_size: int = 500,
        test_size: int = 500,
        batch_size: int = 64,
        num_workers: int = 0,
        seed: int = 0,
        vocab_size: int | None = None,
        num_classes: int | None = None,
        eval_num_pairs: list[int] | None = None,
    ) -> None:
        super().__init__()
        self.eval_num_pairs = list(eval_num_pairs or [])
        if max([num_pairs, *self.eval_num_pairs]) > num_keys:
            raise ValueError(
                f"num_pairs={max([num_pairs, *self.eval_num_pairs])} must be <= num_keys={num_keys}"
            )
        self.eval_suffixes = ["", *(f"@{2 * p + 1}" for p in self.eval_num_pairs)]
        self.num_pairs, self.num_keys, self.num_values = num_pairs, num_keys, num_values
        self.sizes = {"train": train_size, "val": val_size, "test": test_size}
        self.batch_size, self.num_workers, self.seed = batch_size, num_workers, seed
        self.vocab_size = 1 + num_keys + num_values
        self.num_classes = num_values
        self.splits: dict[str, RecallDataset] = {}

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        self.splits["train"] = self._dataset(self.sizes["train"], self.num_pairs, 0)
        for offset, split in enumerate(("val", "test"), start=1):
            pairs = [self.num_pairs, *self.eval_num_pairs]
            sets = [
                self._dataset(self.sizes[split], p, offset + 2 * i) for i, p in enumerate(pairs)
            ]
            self.splits[split] = sets if len(sets) > 1 else sets[0]

    def _dataset(self, size: int, num_pairs: int, offset: int) -> RecallDataset:
        seed = self.seed * 101 + offset  # a distinct stream per split and length
        return RecallDataset(size, num_pairs, self.num_keys, self.num_values, seed)
