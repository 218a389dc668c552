"""torchvision datamodules read tiny files written in the official on-disk formats."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.datasets

from research.data.vision import (
    CIFAR10DataModule,
    FashionMNISTDataModule,
    MNISTDataModule,
    TorchvisionDataModule,
)
from tests.helpers.image_files import N_TEST, N_TRAIN, labels, write_cifar10, write_mnist

DATASETS = pytest.mark.parametrize(
    ("module_cls", "channels", "size"),
    [(MNISTDataModule, 1, 28), (FashionMNISTDataModule, 1, 28), (CIFAR10DataModule, 3, 32)],
)


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Cut the network off (as on a cluster node) and record every attempt to reach it."""
    attempts: list[str] = []

    def refuse(*args, **kwargs):
        attempts.append(repr(args[:2]))
        raise OSError("network is off in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def _write(root: Path, module_cls: type, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """Tiny official-format files under `root`; returns the test images as N x C x H x W."""
    if module_cls is not CIFAR10DataModule:
        return write_mnist(root, module_cls.dataset_name)[:, None]
    # torchvision checks the md5 of the official CIFAR files, which tiny files cannot match: its
    # `check_integrity` (cifar module only; used for the batches and batches.meta) here checks
    # only that the file exists. The rest of torchvision's loading code runs unchanged.
    monkeypatch.setattr(
        torchvision.datasets.cifar, "check_integrity", lambda path, md5=None: Path(path).is_file()
    )
    return write_cifar10(root)


def _setup(module_cls: type, root: Path, **kwargs) -> TorchvisionDataModule:
    module = module_cls(data_dir=str(root), batch_size=8, **kwargs)
    module.setup()
    return module


@DATASETS
def test_official_files_load_split_and_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module_cls, channels: int, size: int
):
    test_images = _write(tmp_path, module_cls, monkeypatch)
    module = _setup(module_cls, tmp_path, normalize=False, in_channels=channels, image_size=size)
    x_test, y_test = module.splits["test"].tensors
    assert x_test.shape == (N_TEST, channels, size, size) and x_test.dtype == torch.float32
    # Every pixel written comes back, in its channel and place, scaled to [0, 1].
    assert torch.equal(x_test, torch.as_tensor(test_images).float() / 255)
    assert y_test.dtype == torch.long and y_test.tolist() == labels(N_TEST).tolist()
    x_train, y_train = module.splits["train"].tensors
    assert x_train.shape[1:] == (channels, size, size)
    y_val = module.splits["val"].tensors[1]
    per_class = N_TRAIN // 10
    assert torch.bincount(torch.cat([y_train, y_val])).tolist() == [per_class] * 10
    assert torch.bincount(y_val).tolist() == [per_class // 10] * 10  # val_fraction 0.1, stratified
    x, y = next(iter(module.train_dataloader()))
    assert x.shape == (8, channels, size, size) and y.dtype == torch.long


@DATASETS
def test_normalisation_is_per_channel_with_train_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module_cls, channels: int, size: int
):
    _write(tmp_path, module_cls, monkeypatch)
    raw = _setup(module_cls, tmp_path, normalize=False)
    train = raw.splits["train"].tensors[0]
    mean, std = train.mean(dim=(0, 2, 3), keepdim=True), train.std(dim=(0, 2, 3), keepdim=True)
    module = _setup(module_cls, tmp_path)
    x = module.splits["train"].tensors[0]
    assert torch.allclose(x.mean(dim=(0, 2, 3)), torch.zeros(channels), atol=1e-5)
    assert torch.allclose(x.std(dim=(0, 2, 3)), torch.ones(channels), atol=1e-4)
    expected = (raw.splits["test"].tensors[0] - mean) / std
    assert torch.allclose(module.splits["test"].tensors[0], expected, atol=1e-5)


@DATASETS
@pytest.mark.parametrize(
    ("download", "problem"),
    [(False, "are missing or damaged in"), (True, "could not be downloaded to")],
)
def test_missing_files_fail_in_one_line_naming_the_folder(
    tmp_path: Path,
    network_attempts: list[str],
    module_cls,
    channels: int,
    size: int,
    download: bool,
    problem: str,
):
    module = module_cls(data_dir=str(tmp_path), batch_size=8, download=download)
    with pytest.raises(FileNotFoundError) as err:
        module.prepare_data()
        module.setup()
    message = str(err.value)
    folder = tmp_path / (
        "cifar-10-batches-py" if channels == 3 else f"{module_cls.dataset_name}/raw"
    )
    assert "\n" not in message
    assert message.startswith(f"{module_cls.dataset_name} files {problem} {folder};")
    assert "data.download=true" in message
    # With download=false nothing touches the network; with download=true (network cut off here)
    # torchvision tries and its failure becomes this one-line error.
    assert bool(network_attempts) == download


@DATASETS
def test_only_prepare_data_downloads_not_setup_in_every_rank(
    tmp_path: Path, network_attempts: list[str], module_cls, channels: int, size: int
):
    """Lightning calls prepare_data once per node and setup in every DDP rank."""
    module = module_cls(data_dir=str(tmp_path), batch_size=8, download=True)
    with pytest.raises(FileNotFoundError, match="are missing or damaged in"):
        module.setup()
    assert network_attempts == []
    with pytest.raises(FileNotFoundError, match="could not be downloaded to"):
        module.prepare_data()
    assert network_attempts


def test_missing_torchvision_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "torchvision.datasets", None)  # what an absent package gives
    with pytest.raises(ImportError) as err:
        _setup(CIFAR10DataModule, tmp_path)
    assert "\n" not in str(err.value) and "research[vision]" in str(err.value)


@DATASETS
def test_the_preflight_asks_for_the_files_torchvision_reads_no_more_no_fewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module_cls, channels: int, size: int
):
    """Without download a missing file is refused before the run dir is made; each file the
    check asks for is one torchvision's own loading fails without."""
    from research.config.errors import ConfigError
    from research.data.configs import TORCHVISION_FILES, ImageDataConfig

    target = f"{module_cls.__module__}.{module_cls.__name__}"
    declared = ImageDataConfig(data_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"data\.download=true fetches the official files"):
        declared.check_machine("data", target, {})
    _write(tmp_path, module_cls, monkeypatch)
    declared.check_machine("data", target, {})
    _setup(module_cls, tmp_path)
    folder, names = TORCHVISION_FILES[target]
    for name in names:
        kept = (tmp_path / folder / name).read_bytes()
        (tmp_path / folder / name).unlink()
        with pytest.raises(ConfigError, match=f"lacks {folder}/{name};"):
            declared.check_machine("data", target, {})
        with pytest.raises(FileNotFoundError):
            _setup(module_cls, tmp_path)
        (tmp_path / folder / name).write_bytes(kept)
