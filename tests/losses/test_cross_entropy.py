"""The config-built cross-entropy is torch's, with class weights given as a plain list."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from research.losses.cross_entropy import cross_entropy

WEIGHT = [1.0, 2.0, 0.5, 3.0]


def _batch(ignore_index: int = -100) -> tuple[torch.Tensor, torch.Tensor]:
    """Twelve rows over four classes; the last three targets are `ignore_index`."""
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(12, 4, generator=generator)
    targets = torch.tensor([0, 1, 2, 3, 3, 2, 1, 0, 1, -1, -1, -1])
    return logits, targets.where(targets >= 0, ignore_index)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [None, WEIGHT])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_matches_torch_functional_cross_entropy(reduction, weight, label_smoothing, ignore_index):
    logits, targets = _batch(ignore_index)
    loss = cross_entropy(
        weight=weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )
    expected = F.cross_entropy(
        logits,
        targets,
        weight=None if weight is None else torch.tensor(weight),
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )
    assert torch.allclose(loss(logits, targets), expected)


def test_defaults_are_torchs_defaults():
    logits, targets = _batch()
    assert torch.allclose(cross_entropy()(logits, targets), F.cross_entropy(logits, targets))


def test_integer_weights_become_a_float_buffer():
    """YAML `[1, 2, 1, 3]` parses to ints; the weight must still be float and move with .to()."""
    loss = cross_entropy(weight=[1, 2, 1, 3])
    assert isinstance(loss, nn.CrossEntropyLoss)
    assert loss.weight.dtype == torch.float32
    assert torch.equal(loss.state_dict()["weight"], torch.tensor([1.0, 2.0, 1.0, 3.0]))
    assert loss.to(torch.float64).weight.dtype == torch.float64
