"""Loader workers die with the run that started them, and are seeded as Lightning seeds them."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch
from lightning.fabric.utilities.seed import pl_worker_init_function
from torch.utils.data import DataLoader, Dataset

from research.data.base import SplitDataModule
from research.data.configs import LoaderConfig

# A parent whose two workers each block inside __getitem__ (as a slow decode or download would)
# after leaving a file named by their pid in argv[1].
PARENT = textwrap.dedent(
    """
    import os, sys, time
    from torch.utils.data import Dataset
    from research.data.base import SplitDataModule
    from research.data.configs import LoaderConfig

    class Slow(Dataset):
        def __len__(self):
            return 100

        def __getitem__(self, index):
            open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
            time.sleep(300)
            return index

    class Module(SplitDataModule):
        def __init__(self):
            super().__init__()
            self.config = LoaderConfig(batch_size=1, num_workers=2)
            self.splits = {"train": Slow()}

    next(iter(Module().train_dataloader()))
    """
)


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    """The processes still running (a killed orphan waiting to be reaped is not)."""
    alive = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.mark.slow  # a parent process with loader workers, killed mid-batch: about 10 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_busy_in_a_batch_die_with_a_killed_parent(tmp_path: Path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)])
    workers: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 120
        while len(list(tmp_path.iterdir())) < 2:
            assert parent.poll() is None, "the parent ended before its workers started"
            assert time.monotonic() < deadline, "the workers never started a batch"
            time.sleep(0.1)
        workers = [psutil.Process(int(marker.name)) for marker in tmp_path.iterdir()]
        assert all(w.ppid() == parent.pid for w in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 3
        while _alive(workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(workers), "loader workers outlived their SIGKILLed parent"
    finally:
        parent.kill()
        for worker in _alive(workers):
            worker.kill()


class _Draws(Dataset):
    """Each item: what the worker's Python, numpy and torch generators draw."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> tuple[float, float, float]:
        return random.random(), float(np.random.rand()), torch.rand(()).item()


class _Module(SplitDataModule):
    def __init__(self) -> None:
        super().__init__()
        self.config = LoaderConfig(batch_size=1, num_workers=2)
        self.splits = {"val": _Draws()}


def _draws(loader: DataLoader) -> list[list[float]]:
    torch.manual_seed(7)  # the base seed every worker's seed derives from
    return [[float(value) for value in batch] for batch in loader]


def test_workers_are_seeded_as_lightning_seeds_them(monkeypatch: pytest.MonkeyPatch):
    # seed_everything(..., workers=True) sets PL_SEED_WORKERS; Lightning then adds this seeding to
    # loaders without a worker_init_fn, which the datamodules' loaders must keep doing themselves.
    monkeypatch.setenv("PL_SEED_WORKERS", "1")
    ours = _Module().val_dataloader()
    reference = DataLoader(
        _Draws(),
        batch_size=1,
        num_workers=2,
        worker_init_fn=partial(pl_worker_init_function, rank=0),
    )
    assert _draws(ours) == _draws(reference)
