"""Tiny image datasets written in the official on-disk formats torchvision reads."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np

N_TRAIN, N_TEST = 200, 50


def labels(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.uint8) % 10


def write_idx(path: Path, array: np.ndarray) -> None:
    """IDX: magic (0, 0, 0x08 = ubyte, ndim), big-endian int32 dims, then the raw bytes."""
    dims = struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(struct.pack(">BBBB", 0, 0, 8, array.ndim) + dims + array.tobytes())


def write_mnist(root: Path, folder: str) -> np.ndarray:
    """`<root>/<folder>/raw/*-idx?-ubyte` as MNIST and FashionMNIST use; returns test images."""
    raw = root / folder / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    images = {}
    for prefix, n in (("train", N_TRAIN), ("t10k", N_TEST)):
        images[prefix] = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        write_idx(raw / f"{prefix}-images-idx3-ubyte", images[prefix])
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels(n))
    return images["t10k"]


def write_cifar10(root: Path) -> np.ndarray:
    """`<root>/cifar-10-batches-py/` pickled batches; returns the test images as N x 3 x 32 x 32."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    batches = [(f"data_batch_{i}", N_TRAIN // 5) for i in range(1, 6)] + [("test_batch", N_TEST)]
    for name, n in batches:
        data = rng.integers(0, 256, size=(n, 3 * 32 * 32), dtype=np.uint8)
        with (folder / name).open("wb") as f:
            pickle.dump({"data": data, "labels": labels(n).tolist()}, f)
    with (folder / "batches.meta").open("wb") as f:
        pickle.dump({"label_names": [f"class{i}" for i in range(10)]}, f)
    return data.reshape(N_TEST, 3, 32, 32)
