"""A configurable convolutional image classifier."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from research.models.configs import CNNConfig

LAYOUTS = {"channels_last": torch.channels_last, "contiguous": torch.contiguous_format}


class CNN(nn.Module):
    """Conv -> (BatchNorm) -> ReLU -> MaxPool blocks, then an MLP head.

    Each block halves the spatial size ("same" padding, 2x2 pooling), so the flattened size
    follows from `image_size` and the number of blocks alone and every size is a config value.
    """

    def __init__(self, config: CNNConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = config = CNNConfig.build(config, params)
        final_size = config.image_size >> len(config.channels)
        batch_norm, dropout = config.batch_norm, config.dropout
        blocks: list[nn.Module] = []
        width = config.in_channels
        for out, kernel in zip(config.channels, config.kernel_sizes, strict=True):
            blocks += [nn.Conv2d(width, out, kernel, padding=kernel // 2, bias=not batch_norm)]
            blocks += [nn.BatchNorm2d(out)] if batch_norm else []
            blocks += [nn.ReLU(inplace=True), nn.MaxPool2d(2)]
            width = out
        self.features = nn.Sequential(*blocks)
        head: list[nn.Module] = [nn.Flatten()]
        features = width * final_size * final_size
        for hidden in config.hidden_sizes:
            head += [nn.Linear(features, hidden), nn.ReLU(inplace=True), nn.Dropout(dropout)]
            features = hidden
        head.append(nn.Linear(features, config.num_classes))
        self.classifier = nn.Sequential(*head)
        # Module.to keeps a tensor's layout when it moves it, so the conv weights stay in this
        # format on any device; optimizer state created like them follows.
        self.memory_format = LAYOUTS[config.memory_format]
        self.to(memory_format=self.memory_format)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        # `to`, not `contiguous`: only `to` gives a 1-channel image channels-last strides.
        return self.classifier(self.features(images.to(memory_format=self.memory_format)))

    def extra_repr(self) -> str:
        c = self.config
        return (
            f"in_channels={c.in_channels}, image_size={c.image_size}, num_classes={c.num_classes}"
        )
