"""Warmup schedules, stepped every optimizer step on a real optimizer."""

from __future__ import annotations

import math

import pytest
import torch

from research.optim.schedulers import (
    cosine_with_warmup,
    inverse_sqrt_with_warmup,
    linear_with_warmup,
)

LR = 0.1
FACTORIES = [linear_with_warmup, cosine_with_warmup, inverse_sqrt_with_warmup]


def _lrs(factory, total_steps: int, steps: int | None = None, **kwargs) -> list[float]:
    """The lr each optimizer step used, then the lr after the last step (`steps` + 1 values)."""
    weight = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.AdamW([weight], lr=LR)
    scheduler = factory(optimizer, total_steps=total_steps, **kwargs)
    lrs = []
    for _ in range(total_steps if steps is None else steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.zero_grad()
        (weight**2).sum().backward()
        optimizer.step()
        scheduler.step()
    return [*lrs, optimizer.param_groups[0]["lr"]]


@pytest.mark.parametrize("factory", FACTORIES)
def test_warmup_ramps_linearly_to_the_base_lr_at_warmup_steps(factory):
    lrs = _lrs(factory, 50, warmup_steps=8)
    assert lrs[:8] == pytest.approx([LR * (i + 1) / 8 for i in range(8)])
    assert lrs[7] == pytest.approx(LR)
    assert max(lrs) == pytest.approx(LR)


@pytest.mark.parametrize("factory", FACTORIES)
def test_no_warmup_starts_at_the_base_lr(factory):
    assert _lrs(factory, 20, warmup_steps=0)[0] == pytest.approx(LR)


def test_linear_decays_to_zero_at_total_steps():
    lrs = _lrs(linear_with_warmup, 40, warmup_steps=10)
    assert lrs[10:] == pytest.approx([LR * (40 - s) / 30 for s in range(10, 41)])
    assert lrs[40] == 0.0
    assert _lrs(linear_with_warmup, 40, steps=45, warmup_steps=10)[-1] == 0.0


@pytest.mark.parametrize("min_lr_ratio", [0.0, 0.1])
def test_cosine_ends_at_min_ratio_and_is_halfway_at_the_midpoint(min_lr_ratio):
    lrs = _lrs(cosine_with_warmup, 110, warmup_steps=10, min_lr_ratio=min_lr_ratio)
    floor = LR * min_lr_ratio
    assert lrs[10] == pytest.approx(LR)
    assert lrs[60] == pytest.approx(floor + (LR - floor) / 2)
    assert lrs[110] == pytest.approx(floor)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))
    past_the_end = _lrs(cosine_with_warmup, 110, steps=120, warmup_steps=10, min_lr_ratio=0.1)
    assert past_the_end[-1] == pytest.approx(LR * 0.1)


def test_inverse_sqrt_is_lr_times_sqrt_warmup_over_step_after_warmup():
    """`step` counts optimizer steps from 1, so the last warmup step (step 16) is at the base lr."""
    warmup = 16
    lrs = _lrs(inverse_sqrt_with_warmup, 100, warmup_steps=warmup)
    for index in range(warmup - 1, 100):
        step = index + 1
        assert lrs[index] == pytest.approx(LR * math.sqrt(warmup / step)), step
    assert lrs[63] == pytest.approx(LR / 2)


def test_inverse_sqrt_does_not_stop_at_total_steps():
    lrs = _lrs(inverse_sqrt_with_warmup, 10, steps=400, warmup_steps=4)
    assert lrs[399] == pytest.approx(LR * math.sqrt(4 / 400))


@pytest.mark.parametrize("factory", [linear_with_warmup, cosine_with_warmup])
def test_a_warmup_as_long_as_the_run_is_said_once(factory, caplog: pytest.LogCaptureFixture):
    """The lr then never decays (a recipe's warmup on a shorter run)."""
    with caplog.at_level("WARNING", logger="research.optim.schedulers"):
        lrs = _lrs(factory, total_steps=10, warmup_steps=10)
    assert lrs[:-1] == sorted(lrs[:-1])
    (record,) = caplog.records
    assert record.getMessage().startswith(
        "scheduler.warmup_steps=10 is not shorter than the run's 10 optimizer steps"
    )
    caplog.clear()
    with caplog.at_level("WARNING", logger="research.optim.schedulers"):
        _lrs(factory, total_steps=11, warmup_steps=10)
    assert not caplog.records
