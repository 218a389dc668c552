"""In-memory tensors are read a batch at a time, and the batches are the ones the default
collation gives: the same tensors, in the same order, every epoch, with or without workers."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from research.data.digits import DigitsDataModule
from research.data.tensor_batches import BatchedTensorDataset, batched, whole_batch


def _module(**kwargs) -> DigitsDataModule:
    module = DigitsDataModule(seed=3, batch_size=64, **kwargs)
    module.setup()
    return module


def _default_batches(loader: DataLoader) -> list[list[torch.Tensor]]:
    """What the loader's own sampler gives under torch's default collation of each example."""
    plain = TensorDataset(*loader.dataset.tensors)
    return list(DataLoader(plain, batch_size=loader.batch_size, sampler=loader.sampler))


def _same(ours: list, default: list) -> bool:
    if len(ours) != len(default):
        return False
    for a, b in zip(ours, default, strict=True):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        if not all(torch.equal(x, y) for x, y in zip(a, b, strict=True)):
            return False
    return True


@pytest.mark.parametrize("num_workers", [0, 1])
def test_every_split_gives_the_default_collations_batches(num_workers: int):
    module = _module(num_workers=num_workers)
    for loader in (module.train_dataloader(), module.val_dataloader(), module.test_dataloader()):
        assert isinstance(loader.dataset, BatchedTensorDataset)
        assert loader.collate_fn is whole_batch
        for epoch in (0, 1):  # a new order each epoch, the same on both paths
            if loader.sampler is not None and hasattr(loader.sampler, "set_epoch"):
                loader.sampler.set_epoch(epoch)
            assert _same(list(loader), _default_batches(loader))


def test_the_last_batch_keeps_its_remainder():
    module = _module()
    sizes = [len(y) for _, y in module.train_dataloader()]
    assert sum(sizes) == len(module.splits["train"]) and sizes[-1] == 1455 % 64


def test_a_dataset_with_its_own_collation_or_class_is_left_alone():
    tensors = (torch.arange(10.0), torch.arange(10))

    def collate(items):
        return items

    class Special(TensorDataset):
        pass

    plain = TensorDataset(*tensors)
    assert batched(plain, collate) == (plain, collate)
    special = Special(*tensors)
    assert batched(special, None) == (special, None)
    taken, collate_fn = batched(plain, None)
    assert isinstance(taken, BatchedTensorDataset) and collate_fn is whole_batch
    assert taken.tensors == plain.tensors  # the same tensors, not copies
