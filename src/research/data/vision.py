"""MNIST, Fashion-MNIST and CIFAR-10 through torchvision's own dataset classes.

torchvision reads (and with `download=true`, fetches) the official files; the images are taken
as whole arrays from the dataset objects instead of item by item through PIL, which makes
building the in-memory splits a matter of seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch

from research.data.images import ImageArrays, ImageDataModule


def _expected_folder(dataset_cls: type, root: str) -> Path:
    """Where torchvision looks: `<root>/<base_folder>` (CIFAR) or `<root>/<ClassName>/raw`."""
    base = getattr(dataset_cls, "base_folder", None)
    folder = Path(root) / base if base else Path(root) / dataset_cls.__name__ / "raw"
    return folder.absolute()


def _as_images(data: object) -> torch.Tensor:
    """uint8 N x H x W (MNIST) or N x H x W x C (CIFAR) -> float N x C x H x W in [0, 1]."""
    images = torch.as_tensor(data)
    images = images.unsqueeze(1) if images.ndim == 3 else images.permute(0, 3, 1, 2)
    return images.float().div_(255.0)


def _datasets(class_name: str, root: str, download: bool) -> tuple[Any, Any]:
    """The train and test split objects of `torchvision.datasets.<class_name>`."""
    try:
        import torchvision.datasets as datasets
    except ImportError:
        raise ImportError(
            f"{class_name} needs torchvision, which is missing: pip install 'research[vision]'"
        ) from None
    dataset_cls = getattr(datasets, class_name)
    try:
        return tuple(dataset_cls(root, train=split, download=download) for split in (True, False))
    except (RuntimeError, OSError) as err:  # not found / bad checksum, or a failed download
        if download:
            problem, remedy = "could not be downloaded to", "retry data.download=true with network"
        else:
            problem, remedy = "are missing or damaged in", "data.download=true fetches them"
        raise FileNotFoundError(
            f"{class_name} files {problem} {_expected_folder(dataset_cls, root)}; {remedy}, "
            f"or copy the official files there ({type(err).__name__})"
        ) from None


def download_torchvision(class_name: str, root: str) -> None:
    """Fetch the official files of `torchvision.datasets.<class_name>` unless already there."""
    _datasets(class_name, root, download=True)


def load_torchvision(class_name: str, root: str) -> ImageArrays:
    """Train and official test split of `torchvision.datasets.<class_name>`, read from disk."""
    train, test = _datasets(class_name, root, download=False)
    return ImageArrays(
        _as_images(train.data),
        torch.as_tensor(train.targets, dtype=torch.long),
        _as_images(test.data),
        torch.as_tensor(test.targets, dtype=torch.long),
    )


class TorchvisionDataModule(ImageDataModule):
    """An image datamodule whose data is `torchvision.datasets.<dataset_name>`; validation is
    carved from the official train split and the official test split is the test set."""

    dataset_name: ClassVar[str]

    def prepare_data(self) -> None:
        """Download here, not in `setup`: Lightning calls this once per node (local rank 0),
        `setup` in every DDP rank, which would all download into the same folder."""
        if self.config.download:
            download_torchvision(self.dataset_name, self.config.data_dir)

    def load(self) -> ImageArrays:
        return load_torchvision(self.dataset_name, self.config.data_dir)


class MNISTDataModule(TorchvisionDataModule):
    """28x28 grey handwritten digits, 60k train / 10k test."""

    dataset_name = "MNIST"


class FashionMNISTDataModule(TorchvisionDataModule):
    """28x28 grey clothing images, 60k train / 10k test: a harder drop-in for MNIST."""

    dataset_name = "FashionMNIST"


class CIFAR10DataModule(TorchvisionDataModule):
    """32x32 colour images of 10 object classes, 50k train / 10k test."""

    dataset_name = "CIFAR10"
