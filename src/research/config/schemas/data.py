"""Datamodules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from research.config.schema import Schema, fail, spec


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


@dataclass
class AssociativeRecall(Schema):
    targets = ("research.data.synthetic.AssociativeRecallDataModule",)
    num_pairs: int = spec(8, ge=1)
    num_keys: int = spec(32, ge=1)
    num_values: int = spec(16, ge=2)
    train_size: int = spec(4000, ge=1)
    val_size: int = spec(500, ge=1)
    test_size: int = spec(500, ge=1)
    batch_size: int = spec(64, ge=1)
    num_workers: int = spec(0, ge=0)
    seed: int = spec(0, ge=0)
    vocab_size: int | None = None
    num_classes: int | None = None
    eval_num_pairs: list[int] | None = None

    def check(self, at: str) -> None:
        longest = max([self.num_pairs, *(self.eval_num_pairs or [])])
        if longest > self.num_keys:
            fail(at, "num_keys", f"={self.num_keys} must be >= the most pairs asked ({longest})")


@dataclass
class StdlibText(Schema):
    targets = ("research.data.stdlib_text.StdlibTextDataModule",)
    data_dir: str = "data"
    vocab_size: int = spec(8000, ge=100)
    max_len: int = spec(128, ge=8)
    batch_size: int = spec(32, ge=1)
    num_workers: int = spec(0, ge=0)
    seed: int = spec(0, ge=0)
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    test_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    max_train_blocks: int | None = spec(None, ge=1)


@dataclass
class HFText(Schema):
    targets = ("research.data.hf_text.HFTextDataModule",)
    name: str = "ag_news"
    data_files: Any = None
    text_field: str = "text"
    label_field: str = "label"
    num_classes: int = spec(4, ge=2)
    vocab_size: int = spec(8000, ge=100)
    max_len: int = spec(128, ge=2)
    data_dir: str = "data"
    batch_size: int = spec(32, ge=1)
    num_workers: int = spec(0, ge=0)
    seed: int = spec(0, ge=0)
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    max_train_size: int | None = spec(None, ge=1)
