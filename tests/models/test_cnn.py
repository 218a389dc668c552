"""The CNN: every size is a config value, for 1- and 3-channel inputs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from research.models.cnn import CNN
from research.models.configs import MEMORY_FORMATS


def _layers(net: nn.Module, kind: type[nn.Module]) -> list[nn.Module]:
    return [m for m in net.modules() if isinstance(m, kind)]


@pytest.mark.parametrize("in_channels", [1, 3])
@pytest.mark.parametrize(
    ("image_size", "channels"),
    [(8, [4]), (8, [4, 8]), (8, [2, 2, 2]), (28, [4, 8]), (28, [2, 4, 8]), (32, [4, 4, 4, 4])],
)
def test_output_shape_for_any_channels_size_and_depth(in_channels, image_size, channels):
    net = CNN(
        in_channels=in_channels,
        image_size=image_size,
        num_classes=7,
        channels=channels,
        kernel_sizes=[3] * len(channels),
        hidden_sizes=[6],
    )
    assert net(torch.randn(2, in_channels, image_size, image_size)).shape == (2, 7)
    assert len(_layers(net, nn.MaxPool2d)) == len(channels)
    assert _layers(net, nn.Conv2d)[0].in_channels == in_channels


def test_head_input_size_follows_image_size_and_depth():
    """28 -> 14 -> 7 -> 3 with three blocks: the head sees 8 channels of 3x3."""
    net = CNN(
        in_channels=1,
        image_size=28,
        num_classes=10,
        channels=[4, 4, 8],
        kernel_sizes=[3, 5, 3],
        hidden_sizes=[],
    )
    (head,) = _layers(net.classifier, nn.Linear)
    assert head.in_features == 8 * 3 * 3
    assert [c.kernel_size for c in _layers(net, nn.Conv2d)] == [(3, 3), (5, 5), (3, 3)]


def test_batch_norm_on_adds_norms_and_drops_conv_bias():
    net = CNN(channels=[4, 8], kernel_sizes=[3, 3], batch_norm=True)
    assert [bn.num_features for bn in _layers(net, nn.BatchNorm2d)] == [4, 8]
    assert all(conv.bias is None for conv in _layers(net, nn.Conv2d))


def test_batch_norm_off_has_no_norms_and_biased_convs():
    net = CNN(channels=[4, 8], kernel_sizes=[3, 3], batch_norm=False)
    assert not _layers(net, nn.BatchNorm2d)
    assert all(conv.bias is not None for conv in _layers(net, nn.Conv2d))
    assert len(list(net.features)) == len(list(CNN(channels=[4, 8], batch_norm=True).features)) - 2


def test_dropout_value_is_applied_after_each_hidden_layer():
    net = CNN(channels=[4], kernel_sizes=[3], hidden_sizes=[16, 8], dropout=0.5)
    assert [d.p for d in _layers(net, nn.Dropout)] == [0.5, 0.5]
    x = torch.randn(4, 1, 8, 8)
    net.eval()
    assert torch.equal(net(x), net(x))
    net.train()
    torch.manual_seed(0)
    assert not torch.equal(net(x), net(x))


def test_empty_hidden_sizes_is_a_linear_head():
    net = CNN(
        in_channels=3,
        image_size=16,
        num_classes=5,
        channels=[4, 6],
        kernel_sizes=[3, 3],
        hidden_sizes=[],
    )
    assert [type(m) for m in net.classifier] == [nn.Flatten, nn.Linear]
    assert net.classifier[1].in_features == 6 * 4 * 4
    assert net(torch.randn(2, 3, 16, 16)).shape == (2, 5)


def test_extra_repr_names_the_shape_arguments():
    assert "in_channels=3, image_size=32, num_classes=7" in repr(
        CNN(in_channels=3, image_size=32, num_classes=7)
    )


def test_every_parameter_gets_a_gradient():
    torch.manual_seed(0)
    net = CNN(
        in_channels=3,
        image_size=8,
        num_classes=4,
        channels=[4, 4],
        kernel_sizes=[3, 3],
        hidden_sizes=[8],
    )
    nn.functional.cross_entropy(net(torch.randn(6, 3, 8, 8)), torch.arange(6) % 4).backward()
    for name, parameter in net.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"channels": [8, 8], "kernel_sizes": [3]},
            "kernel_sizes has 1 entries but channels has 2",
        ),
        ({"channels": [8], "kernel_sizes": [3, 3]}, "one kernel size per conv block"),
        (
            {"image_size": 8, "channels": [4] * 4, "kernel_sizes": [3] * 4},
            "4 pooling blocks, too many for image_size=8",
        ),
        (
            {"image_size": 28, "channels": [4] * 5, "kernel_sizes": [3] * 5},
            "too many for image_size=28",
        ),
        # Fails against cnn.py as written: padding k // 2 keeps the size only for odd k, so an
        # even kernel breaks the head's size and forward() dies with a matmul shape error.
        ({"image_size": 28, "channels": [4] * 3, "kernel_sizes": [2] * 3}, "odd"),
    ],
)
def test_inconsistent_sizes_raise_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        CNN(**kwargs)
    assert "\n" not in str(err.value)


def _conv_weights(net: nn.Module) -> list[torch.Tensor]:
    return [m.weight for m in _layers(net, nn.Conv2d)]


@pytest.mark.parametrize("in_channels", [1, 3])
def test_channels_last_computes_the_contiguous_function(in_channels):
    """The layout is a speed choice: same weights give the same logits and gradients (to
    rounding), whatever layout the input batch arrives in."""
    torch.manual_seed(0)
    nets = {fmt: CNN(in_channels=in_channels, memory_format=fmt) for fmt in MEMORY_FORMATS}
    nets["contiguous"].load_state_dict(nets["channels_last"].state_dict())
    images, labels = torch.randn(5, in_channels, 8, 8), torch.arange(5)
    for net in nets.values():
        net.eval()
        nn.functional.cross_entropy(net(images), labels).backward()
    cl, nchw = nets["channels_last"], nets["contiguous"]
    torch.testing.assert_close(cl(images), nchw(images))
    torch.testing.assert_close(cl(images.to(memory_format=torch.channels_last)), nchw(images))
    for (name, a), b in zip(cl.named_parameters(), nchw.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, msg=name)


def test_conv_weights_and_activations_take_the_configured_layout():
    images = torch.randn(4, 3, 8, 8)
    default = CNN(in_channels=3)
    assert all(w.is_contiguous(memory_format=torch.channels_last) for w in _conv_weights(default))
    assert default.features(images).is_contiguous(memory_format=torch.channels_last)
    assert not images.is_contiguous(memory_format=torch.channels_last)  # the input was NCHW
    nchw = CNN(in_channels=3, memory_format="contiguous")
    assert all(w.is_contiguous() for w in _conv_weights(nchw))
    assert nchw.features(images).is_contiguous()


def test_a_contiguous_checkpoint_loads_into_channels_last_weights():
    """Weights saved by a contiguous model (or before the layout was a setting) load by value
    and keep the loading model's layout, so resuming them runs the fast kernels."""
    saved = CNN(memory_format="contiguous").state_dict()
    net = CNN()
    net.load_state_dict(saved)
    keys = ["features.0.weight", "features.4.weight"]
    for weight, key in zip(_conv_weights(net), keys, strict=True):
        assert torch.equal(weight, saved[key])
        assert weight.is_contiguous(memory_format=torch.channels_last)
