"""Shuffling that is a pure function of (seed, epoch), so a resumed run sees the same batches."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import Sampler

from research.utils.seeding import derive_seed


class EpochSeededSampler(Sampler[int]):
    """A random permutation drawn from its own generator seeded from (seed, epoch).

    Lightning calls `set_epoch` before every epoch (as it does for DistributedSampler); the global
    RNG is never touched, so the order does not depend on what else consumed random numbers.
    """

    def __init__(self, num_samples: int, seed: int = 0) -> None:
        self.num_samples = num_samples
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(derive_seed(self.seed, self.epoch))
        return iter(torch.randperm(self.num_samples, generator=generator).tolist())

    def __len__(self) -> int:
        return self.num_samples
