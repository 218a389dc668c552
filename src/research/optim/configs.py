"""The parameters of the learning-rate schedules in `research.optim.schedulers`, declared once.

torch's optimizers are declared in `research.config.schemas.optim` (we configure them, we do
not own them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from research.config.errors import ConfigError
from research.config.schema import Schema, spec


@dataclass
class WarmupConfig(Schema):
    """Linear warmup, then linear decay to 0 at the last step or decay as 1/sqrt(step)."""

    targets = (
        "research.optim.schedulers.linear_with_warmup",
        "research.optim.schedulers.inverse_sqrt_with_warmup",
    )
    warmup_steps: int = spec(0, ge=0)
    """Optimizer steps over which the lr rises linearly to its base value; 0 starts at the base."""

    def check_run(self, at: str, target: str, config: dict[str, Any]) -> None:
        check_horizon(target, config)


@dataclass
class CosineConfig(WarmupConfig):
    """Linear warmup, then half a cosine from the base lr down to min_lr_ratio x base lr."""

    targets = ("research.optim.schedulers.cosine_with_warmup",)
    min_lr_ratio: float = spec(0.0, ge=0.0, le=1.0)
    """The lr reached at the run's last step, as a fraction of the base lr; 0 decays to zero."""


# Schedules whose shape depends on the run's length (they decay to its last step).
NEEDS_HORIZON = (
    "research.optim.schedulers.linear_with_warmup",
    "research.optim.schedulers.cosine_with_warmup",
)


def check_horizon(target: str, config: dict[str, Any]) -> None:
    """A schedule that decays to the last step needs a run with a last step, and
    `trainer.max_epochs=-1` without `max_steps` has none."""
    trainer = config.get("trainer") or {}
    endless = trainer.get("max_epochs") == -1 and trainer.get("max_steps", -1) == -1
    if endless and target in NEEDS_HORIZON:
        name = target.rsplit(".", 1)[-1]
        raise ConfigError(
            f"trainer.max_epochs=-1 trains until stopped, but scheduler {name} "
            "decays to the run's last step; set trainer.max_epochs > 0 or trainer.max_steps, or "
            "use scheduler=none or scheduler=inverse_sqrt"
        )
