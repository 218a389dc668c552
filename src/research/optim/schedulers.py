"""Per-step learning-rate schedules with linear warmup.

Each factory has the signature `(optimizer, total_steps, config=None, **params) -> LambdaLR`
so a config partial only needs the optimizer and the run's step count, which the task knows at
fit time; the parameters are declared in `research.optim.configs`.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

from research.optim.configs import CosineConfig, WarmupConfig

log = logging.getLogger(__name__)


def _warmup(step: int, warmup_steps: int) -> float:
    return (step + 1) / warmup_steps if step < warmup_steps else 1.0


def _horizon(total_steps: int | None, warmup_steps: int, name: str) -> int:
    """The run's step count; None means the run has no end (trainer.max_epochs=-1). A warmup
    as long as the run is said once: the lr never decays (nor, if longer, reaches its base),
    which a run's curves show only to someone who looks (a recipe's warmup on a shorter run)."""
    if total_steps is None:
        raise ValueError(
            f"{name} decays to the run's last step, but this run has no end "
            "(trainer.max_epochs=-1); set max_epochs or max_steps, or use inverse_sqrt"
        )
    if warmup_steps >= total_steps:
        log.warning(
            "scheduler.warmup_steps=%d is not shorter than the run's %d optimizer steps: the run "
            "ends before the lr decays (or reaches optimizer.lr); shorten the warmup or lengthen "
            "the run",
            warmup_steps,
            total_steps,
        )
    return total_steps


def linear_with_warmup(
    optimizer: Optimizer,
    total_steps: int | None,
    config: WarmupConfig | None = None,
    **params: Any,
) -> LambdaLR:
    """Linear warmup to the base lr, then linear decay to 0 at `total_steps`."""
    warmup_steps = WarmupConfig.build(config, params).warmup_steps
    total_steps = _horizon(total_steps, warmup_steps, "linear_with_warmup")

    def factor(step: int) -> float:
        if step < warmup_steps:
            return _warmup(step, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return LambdaLR(optimizer, factor)


def cosine_with_warmup(
    optimizer: Optimizer,
    total_steps: int | None,
    config: CosineConfig | None = None,
    **params: Any,
) -> LambdaLR:
    """Linear warmup, then half a cosine from the base lr down to `min_lr_ratio` x base lr."""
    c = CosineConfig.build(config, params)
    warmup_steps, min_lr_ratio = c.warmup_steps, c.min_lr_ratio
    total_steps = _horizon(total_steps, warmup_steps, "cosine_with_warmup")

    def factor(step: int) -> float:
        if step < warmup_steps:
            return _warmup(step, warmup_steps)
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, factor)


def inverse_sqrt_with_warmup(
    optimizer: Optimizer,
    total_steps: int | None,
    config: WarmupConfig | None = None,
    **params: Any,
) -> LambdaLR:
    """Vaswani et al. (2017): linear warmup, then decay proportional to 1/sqrt(step).

    `total_steps` is unused (the schedule has no end) but kept for a uniform signature.
    """
    del total_steps
    warmup_steps = WarmupConfig.build(config, params).warmup_steps
    pivot = max(1, warmup_steps)

    def factor(step: int) -> float:
        if step < warmup_steps:
            return _warmup(step, warmup_steps)
        return math.sqrt(pivot / (step + 1)) if step + 1 > pivot else 1.0

    return LambdaLR(optimizer, factor)
