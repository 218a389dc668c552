"""torchvision datamodules read tiny files written in the official on-disk formats."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torchvision.datasets

from research.data.vision import CIFAR10DataModule, FashionMNISTDataModule, MNISTDataModule
from tests.helpers.image_files import N_TEST, N_TRAIN, labels, write_cifar10, write_mnist


@pytest.mark.parametrize(
    ("module_cls", "folder"), [(MNISTDataModule, "MNIST"), (FashionMNISTDataModule, "FashionMNIST")]
)
def test_mnist_formats_load_split_and_round_trip(tmp_path: Path, module_cls, folder: str):
    test_images = write_mnist(tmp_path, folder)
    module = module_cls(data_dir=str(tmp_path), image_size=28, normalize=False, batch_size=8)
    module.setup()
    x_test, y_test = module.splits["test"].tensors
    assert x_test.shape == (N_TEST, 1, 28, 28)
    assert torch.allclose(x_test[3, 0], torch.as_tensor(test_images[3]).float() / 255)
    assert y_test.tolist() == labels(N_TEST).tolist()
    assert len(module.splits["train"]) + len(module.splits["val"]) == N_TRAIN
    assert len(module.splits["val"]) == N_TRAIN // 10


def test_cifar10_format_loads_as_colour_nchw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    test_images = write_cifar10(tmp_path)
    # torchvision checks the md5 of the official files, which tiny files cannot match; check only
    # that they exist, and leave the rest of its loading code untouched.
    monkeypatch.setattr(
        torchvision.datasets.cifar, "check_integrity", lambda path, md5=None: Path(path).is_file()
    )
    module = CIFAR10DataModule(data_dir=str(tmp_path), in_channels=3, image_size=32)
    module.setup()
    x_test, _ = module.splits["test"].tensors
    assert x_test.shape == (N_TEST, 3, 32, 32)
    train = module.splits["train"].tensors[0]
    assert train.mean(dim=(0, 2, 3)).abs().max() < 1e-4  # per-channel normalisation
    raw = CIFAR10DataModule(data_dir=str(tmp_path), normalize=False)
    raw.setup()
    assert torch.allclose(raw.splits["test"].tensors[0][5], torch.as_tensor(test_images[5]) / 255)


@pytest.mark.parametrize(
    ("module_cls", "expected"),
    [
        (MNISTDataModule, "MNIST/raw"),
        (FashionMNISTDataModule, "FashionMNIST/raw"),
        (CIFAR10DataModule, "cifar-10-batches-py"),
    ],
)
def test_missing_files_fail_in_one_line_naming_the_folder(tmp_path: Path, module_cls, expected):
    module = module_cls(data_dir=str(tmp_path), download=False)
    with pytest.raises(FileNotFoundError) as err:
        module.setup()
    message = str(err.value)
    assert "\n" not in message
    assert str(tmp_path / expected) in message
    assert "data.download=true" in message
