"""MNIST, Fashion-MNIST and CIFAR-10 through torchvision's own dataset classes.

torchvision reads (and with `download=true`, fetches) the official files; the images are taken
as whole arrays from the dataset objects instead of item by item through PIL, which makes
building the in-memory splits a matter of seconds.
"""

from __future__ import annotations

from pathlib import Path

import torch

from research.data.images import ImageArrays, ImageDataModule


def _expected_folder(dataset_cls: type, root: str) -> Path:
    base = getattr(dataset_cls, "base_folder", None)  # CIFAR keeps its own folder name
    return Path(root) / base if base else Path(root) / dataset_cls.__name__ / "raw"


def _as_images(data: object) -> torch.Tensor:
    """uint8 N x H x W (MNIST) or N x H x W x C (CIFAR) -> float N x C x H x W in [0, 1]."""
    images = torch.as_tensor(data)
    images = images.unsqueeze(1) if images.ndim == 3 else images.permute(0, 3, 1, 2)
    return images.float().div_(255.0)


def load_torchvision(class_name: str, root: str, download: bool) -> ImageArrays:
    """Train and official test split of `torchvision.datasets.<class_name>`."""
    try:
        import torchvision.datasets as datasets
    except ImportError:
        raise ImportError(
            f"data={class_name.lower()} needs torchvision: pip install 'research[vision]'"
        ) from None
    dataset_cls = getattr(datasets, class_name)
    folder = _expected_folder(dataset_cls, root)
    try:
        splits = [dataset_cls(root, train=train, download=download) for train in (True, False)]
    except Exception as err:  # noqa: BLE001 - torchvision raises RuntimeError or URLError
        action = "the download failed (no network?)" if download else "they are not there"
        raise FileNotFoundError(
            f"{class_name} files are expected in {folder} but {action}; set data.download=true "
            f"with network access, or copy the official files there ({type(err).__name__})"
        ) from None
    train, test = splits
    return ImageArrays(
        _as_images(train.data),
        torch.as_tensor(train.targets, dtype=torch.long),
        _as_images(test.data),
        torch.as_tensor(test.targets, dtype=torch.long),
    )


class MNISTDataModule(ImageDataModule):
    """28x28 grey handwritten digits; validation is carved from the official train split."""

    def load(self) -> ImageArrays:
        return load_torchvision("MNIST", self.data_dir, self.download)


class FashionMNISTDataModule(ImageDataModule):
    """28x28 grey clothing images, a harder drop-in for MNIST."""

    def load(self) -> ImageArrays:
        return load_torchvision("FashionMNIST", self.data_dir, self.download)


class CIFAR10DataModule(ImageDataModule):
    """32x32 colour images of 10 object classes."""

    def load(self) -> ImageArrays:
        return load_torchvision("CIFAR10", self.data_dir, self.download)
