"""The digits datamodule and the shared image split/normalise logic, on the real bundled data."""

from __future__ import annotations

import torch

from research.data.digits import DigitsDataModule
from research.data.samplers import EpochSeededSampler


def _module(seed: int = 0, **kwargs) -> DigitsDataModule:
    module = DigitsDataModule(seed=seed, **kwargs)
    module.setup()
    return module


def _labels(module: DigitsDataModule, split: str) -> torch.Tensor:
    return module.splits[split].tensors[1]


def test_splits_are_disjoint_cover_everything_and_are_stratified():
    module = _module()
    sizes = {split: len(module.splits[split]) for split in ("train", "val", "test")}
    assert sum(sizes.values()) == 1797
    assert sizes["test"] == 180 and sizes["val"] == 162
    everything = torch.cat([module.splits[s].tensors[0].flatten(1) for s in sizes])
    assert torch.unique(everything, dim=0).shape[0] > 1700  # no sample used twice (few duplicates)
    for split in ("val", "test"):
        share = torch.bincount(_labels(module, split), minlength=10).float() / sizes[split]
        assert (share - 0.1).abs().max() < 0.03


def test_split_depends_on_the_seed_only():
    a, b, c = _module(0), _module(0), _module(1)
    assert torch.equal(a.splits["test"].tensors[0], b.splits["test"].tensors[0])
    assert not torch.equal(a.splits["test"].tensors[0], c.splits["test"].tensors[0])


def test_normalisation_uses_train_statistics():
    module = _module()
    train = module.splits["train"].tensors[0]
    assert abs(train.mean().item()) < 1e-5 and abs(train.std().item() - 1) < 1e-3
    raw = _module(normalize=False).splits["train"].tensors[0]
    assert raw.min() >= 0 and raw.max() <= 1


def test_batches_have_the_shapes_the_cnn_expects():
    x, y = next(iter(_module(batch_size=16).train_dataloader()))
    assert x.shape == (16, 1, 8, 8) and x.dtype == torch.float32
    assert y.shape == (16,) and y.dtype == torch.long


def test_epoch_seeded_sampler_is_a_function_of_seed_and_epoch():
    def order(seed: int, epoch: int) -> list[int]:
        sampler = EpochSeededSampler(100, seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert order(0, 3) == order(0, 3)
    assert order(0, 3) != order(0, 4) != order(1, 3)
    assert sorted(order(0, 3)) == list(range(100))
