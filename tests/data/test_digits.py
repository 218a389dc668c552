"""The digits datamodule and the shared image split/normalise logic, on the real bundled data."""

from __future__ import annotations

import torch
from sklearn.datasets import load_digits

from research.data.digits import DigitsDataModule
from research.data.samplers import EpochSeededSampler

SPLITS = ("train", "val", "test")


def _module(seed: int = 0, **kwargs) -> DigitsDataModule:
    module = DigitsDataModule(seed=seed, **kwargs)
    module.setup()
    return module


def _rows(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each sample as one row (pixels, label); the distinct rows and how often each occurs."""
    return torch.unique(
        torch.cat([x.flatten(1), y[:, None].float()], dim=1), dim=0, return_counts=True
    )


def test_splits_are_disjoint_cover_everything_and_are_stratified():
    module = _module(normalize=False)
    digits = load_digits()
    everything = torch.as_tensor(digits.images, dtype=torch.float32) / 16.0
    labels = torch.as_tensor(digits.target)
    pieces = [module.splits[split].tensors for split in SPLITS]
    # The splits together are the dataset as a multiset: every sample once, none twice.
    together = _rows(torch.cat([x for x, _ in pieces]), torch.cat([y for _, y in pieces]))
    original = _rows(everything, labels)
    assert torch.equal(together[0], original[0]) and torch.equal(together[1], original[1])
    assert [len(y) for _, y in pieces] == [1455, 162, 180]
    share = torch.bincount(labels).float() / len(labels)
    for _, y in pieces:
        assert (torch.bincount(y, minlength=10).float() / len(y) - share).abs().max() < 0.01


def test_split_depends_on_the_seed_only():
    a, b, c = _module(0), _module(0), _module(1)
    for split in SPLITS:
        assert torch.equal(a.splits[split].tensors[0], b.splits[split].tensors[0])
        assert torch.equal(a.splits[split].tensors[1], b.splits[split].tensors[1])
        assert not torch.equal(a.splits[split].tensors[0], c.splits[split].tensors[0])


def test_normalisation_uses_train_statistics():
    raw = _module(normalize=False)
    train = raw.splits["train"].tensors[0]
    assert train.min() >= 0 and train.max() <= 1
    mean, std = train.mean(dim=(0, 2, 3), keepdim=True), train.std(dim=(0, 2, 3), keepdim=True)
    normalised = _module()
    x = normalised.splits["train"].tensors[0]
    assert torch.allclose(x.mean(dim=(0, 2, 3)), torch.zeros(1), atol=1e-5)
    assert torch.allclose(x.std(dim=(0, 2, 3)), torch.ones(1), atol=1e-4)
    for split in ("val", "test"):  # held-out splits reuse the train mean/std
        expected = (raw.splits[split].tensors[0] - mean) / std
        assert torch.allclose(normalised.splits[split].tensors[0], expected, atol=1e-5)


def test_batches_have_the_shapes_the_cnn_expects():
    module = _module(batch_size=16)
    assert isinstance(module.train_dataloader().sampler, EpochSeededSampler)
    for loader in (module.train_dataloader(), module.val_dataloader(), module.test_dataloader()):
        x, y = next(iter(loader))
        assert x.shape == (16, 1, 8, 8) and x.dtype == torch.float32
        assert y.shape == (16,) and y.dtype == torch.long


def test_epoch_seeded_sampler_is_a_function_of_seed_and_epoch():
    def order(seed: int, epoch: int) -> list[int]:
        sampler = EpochSeededSampler(100, seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert order(0, 3) == order(0, 3)
    assert order(0, 3) != order(0, 4)
    assert order(0, 3) != order(1, 3)
    assert sorted(order(0, 3)) == list(range(100))
