"""Warmup schedules, stepped every optimizer step."""

from __future__ import annotations

import math

import pytest
import torch

from research.optim.schedulers import (
    cosine_with_warmup,
    inverse_sqrt_with_warmup,
    linear_with_warmup,
)


def _lrs(factory, steps: int, **kwargs) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = factory(optimizer, total_steps=steps, **kwargs)
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


def test_linear_warms_up_then_decays_to_zero():
    lrs = _lrs(linear_with_warmup, 110, warmup_steps=10)
    assert lrs[:10] == pytest.approx([(i + 1) / 10 for i in range(10)])
    assert lrs[10] == pytest.approx(1.0)
    assert lrs[60] == pytest.approx(0.5)
    assert lrs[-1] == pytest.approx(1 / 100)


def test_cosine_reaches_min_ratio_and_is_halfway_at_midpoint():
    lrs = _lrs(cosine_with_warmup, 105, warmup_steps=5, min_lr_ratio=0.1)
    assert lrs[4] == pytest.approx(1.0)
    assert lrs[55] == pytest.approx(0.1 + 0.9 * 0.5)
    assert lrs[-1] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 99 / 100)))


def test_inverse_sqrt_after_warmup():
    lrs = _lrs(inverse_sqrt_with_warmup, 400, warmup_steps=100)
    assert lrs[49] == pytest.approx(0.5)
    assert lrs[99] == pytest.approx(1.0)
    assert lrs[399] == pytest.approx(math.sqrt(100 / 400))
