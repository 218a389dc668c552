"""A configurable convolutional image classifier."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class CNN(nn.Module):
    """Conv -> (BatchNorm) -> ReLU -> MaxPool blocks, then an MLP head.

    Each block halves the spatial size ("same" padding, 2x2 pooling), so the flattened size
    follows from `image_size` and the number of blocks alone and every size is a config value.
    """

    def __init__(
        self,
        in_channels: int = 1,
        image_size: int = 8,
        num_classes: int = 10,
        channels: Sequence[int] = (32, 64),
        kernel_sizes: Sequence[int] = (3, 3),
        batch_norm: bool = True,
        hidden_sizes: Sequence[int] = (128,),
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if len(channels) != len(kernel_sizes):
            raise ValueError(
                f"CNN got {len(channels)} channels but {len(kernel_sizes)} kernel_sizes; "
                "give one kernel size per conv block"
            )
        if any(k < 1 or k % 2 == 0 for k in kernel_sizes):
            raise ValueError(
                f"CNN kernel_sizes={list(kernel_sizes)} must be odd positive integers "
                "(padding k // 2 keeps the image size only for odd k)"
            )
        final_size = image_size >> len(channels)
        if final_size < 1:
            raise ValueError(
                f"CNN with {len(channels)} pooling blocks needs image_size >= "
                f"{2 ** len(channels)}, got {image_size}"
            )
        self.in_channels, self.image_size, self.num_classes = in_channels, image_size, num_classes
        blocks: list[nn.Module] = []
        width = in_channels
        for out, kernel in zip(channels, kernel_sizes, strict=True):
            blocks += [nn.Conv2d(width, out, kernel, padding=kernel // 2, bias=not batch_norm)]
            blocks += [nn.BatchNorm2d(out)] if batch_norm else []
            blocks += [nn.ReLU(inplace=True), nn.MaxPool2d(2)]
            width = out
        self.features = nn.Sequential(*blocks)
        head: list[nn.Module] = [nn.Flatten()]
        features = width * final_size * final_size
        for hidden in hidden_sizes:
            head += [nn.Linear(features, hidden), nn.ReLU(inplace=True), nn.Dropout(dropout)]
            features = hidden
        head.append(nn.Linear(features, num_classes))
        self.classifier = nn.Sequential(*head)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(images))

    def extra_repr(self) -> str:
        return (
            f"in_channels={self.in_channels}, image_size={self.image_size}, "
            f"num_classes={self.num_classes}"
        )
