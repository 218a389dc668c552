"""The CNN: every size is a config value, for 1- and 3-channel inputs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from research.models.cnn import CNN


@pytest.mark.parametrize(
    ("in_channels", "image_size", "channels"),
    [(1, 8, [32, 64]), (1, 28, [8, 16, 32]), (3, 32, [16, 32]), (3, 32, [4])],
)
def test_output_shape_for_any_configured_input(in_channels, image_size, channels):
    net = CNN(in_channels, image_size, 7, channels, [3] * len(channels), hidden_sizes=[20])
    assert net(torch.randn(5, in_channels, image_size, image_size)).shape == (5, 7)


def test_batch_norm_flag_and_conv_bias():
    with_bn = CNN(batch_norm=True)
    without = CNN(batch_norm=False)
    assert any(isinstance(m, nn.BatchNorm2d) for m in with_bn.modules())
    assert not any(isinstance(m, nn.BatchNorm2d) for m in without.modules())
    assert with_bn.features[0].bias is None and without.features[0].bias is not None


def test_kernel_sizes_dropout_and_empty_mlp():
    net = CNN(channels=[8, 8], kernel_sizes=[5, 3], hidden_sizes=[], dropout=0.3)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert [c.kernel_size for c in convs] == [(5, 5), (3, 3)]
    assert [m for m in net.classifier if isinstance(m, nn.Linear)][0].in_features == 8 * 2 * 2
    assert all(m.p == 0.3 for m in CNN(dropout=0.3).modules() if isinstance(m, nn.Dropout))


def test_every_parameter_gets_a_gradient():
    net = CNN(in_channels=3, image_size=16)
    net(torch.randn(4, 3, 16, 16)).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"channels": [8, 8], "kernel_sizes": [3]}, "one kernel size per conv block"),
        ({"image_size": 8, "channels": [4, 4, 4, 4], "kernel_sizes": [3] * 4}, "image_size >= 16"),
    ],
)
def test_inconsistent_sizes_raise_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        CNN(**kwargs)
    assert "\n" not in str(err.value)
