"""Datamodules."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, spec


@dataclass
class ImageData(Schema):
    """Shared by the digits and torchvision datamodules."""

    targets = (
        "research.data.digits.DigitsDataModule",
        "research.data.vision.MNISTDataModule",
        "research.data.vision.FashionMNISTDataModule",
        "research.data.vision.CIFAR10DataModule",
    )
    data_dir: str = "data"
    batch_size: int = spec(64, ge=1)
    num_workers: int = spec(0, ge=0)
    seed: int = spec(0, ge=0)
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    test_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    normalize: bool = True
    download: bool = False
    pin_memory: bool = False
    num_classes: int = spec(10, ge=2)
    in_channels: int = spec(1, ge=1)
    image_size: int = spec(8, ge=1)
