"""The parameters of the progress log, declared once and torch-free."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, spec


@dataclass
class ProgressLogConfig(Schema):
    targets = ("research.progress.log.ProgressLog",)
    # A line every this many optimizer steps or seconds, whichever comes first.
    every_n_steps: int = spec(50, ge=1)
    every_s: float = spec(30.0, gt=0.0)
    # Also when stdout is a terminal (where the progress bar already shows it).
    always: bool = False
