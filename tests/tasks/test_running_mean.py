"""RunningMean: the epoch mean of a training step's totals, reduced over every rank once."""

from __future__ import annotations

import math
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from lightning.pytorch.strategies import DDPStrategy, SingleDeviceStrategy

from research.tasks.running_mean import RunningMean

ONE_DEVICE = SingleDeviceStrategy(torch.device("cpu"))


def test_the_mean_is_the_sum_of_totals_over_the_sum_of_counts():
    mean = RunningMean()
    for total, count in [(3.0, 4), (1.0, 4), (2.0, 2)]:
        mean.update(torch.tensor(total), count)
    assert float(mean.compute(ONE_DEVICE)) == pytest.approx(6.0 / 10)


def test_reset_starts_a_new_epoch_and_nothing_added_is_nan():
    mean = RunningMean()
    mean.update(torch.tensor(5.0))
    mean.reset()
    assert math.isnan(float(mean.compute(ONE_DEVICE)))
    mean.update(torch.tensor(2.0))
    assert float(mean.compute(ONE_DEVICE)) == 2.0


def test_the_callers_tensor_is_never_added_to():
    loss = torch.tensor(1.5, requires_grad=True) * 1.0
    mean = RunningMean()
    mean.update(loss)
    mean.update(torch.tensor(0.5))
    assert float(loss.detach()) == 1.5
    assert float(mean.compute(ONE_DEVICE)) == 1.0


def _rank(rank: int, port: int, results: dict) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        strategy = DDPStrategy(parallel_devices=[torch.device("cpu")] * 2)
        mean = RunningMean()
        # Rank 0 saw 3 of 4 right, rank 1 saw 1 of 1: 4 of 5 over both, not (0.75 + 1) / 2.
        for correct, count in ([(2.0, 2), (1.0, 2)], [(1.0, 1)])[rank]:
            mean.update(torch.tensor(correct), count)
        results[rank] = float(mean.compute(strategy))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_under_ddp_every_rank_gets_the_mean_over_all_ranks_examples():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_rank, args=(port, results), nprocs=2, join=True)
        assert dict(results) == {0: pytest.approx(0.8), 1: pytest.approx(0.8)}
