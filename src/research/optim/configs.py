"""The parameters of the learning-rate schedules in `research.optim.schedulers`, declared once.

torch's optimizers are declared in `research.config.schemas.optim` (we configure them, we do
not own them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from research.config.schema import Schema, spec


@dataclass
class WarmupConfig(Schema):
    targets = (
        "research.optim.schedulers.linear_with_warmup",
        "research.optim.schedulers.inverse_sqrt_with_warmup",
    )
    warmup_steps: int = spec(0, ge=0)


@dataclass
class CosineConfig(Schema):
    targets = ("research.optim.schedulers.cosine_with_warmup",)
    warmup_steps: int = spec(0, ge=0)
    min_lr_ratio: float = spec(0.0, ge=0.0, le=1.0)


# Schedules whose shape depends on the run's length (they decay to its last step).
NEEDS_HORIZON = (
    "research.optim.schedulers.linear_with_warmup",
    "research.optim.schedulers.cosine_with_warmup",
)


def check_horizon(config: dict[str, Any]) -> str | None:
    """Why a config's schedule cannot work, or None: a schedule that decays to the last step
    needs a run with a last step, and `trainer.max_epochs=-1` without `max_steps` has none."""
    trainer, scheduler = config.get("trainer") or {}, config.get("scheduler") or {}
    endless = trainer.get("max_epochs") == -1 and trainer.get("max_steps", -1) == -1
    if endless and scheduler.get("_target_") in NEEDS_HORIZON:
        name = str(scheduler["_target_"]).rsplit(".", 1)[-1]
        return (
            f"trainer.max_epochs=-1 trains until stopped, but scheduler {name} decays to the "
            "run's last step; set trainer.max_epochs > 0 or trainer.max_steps, or use "
            "scheduler=none or scheduler=inverse_sqrt"
        )
    return None
