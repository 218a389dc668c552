"""The parameters of the learning-rate schedules in `research.optim.schedulers`, declared once.

torch's optimizers are declared in `research.config.schemas.optim` (we configure them, we do
not own them).
"""

from __future__ import annotations

from dataclasses import dataclass

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
