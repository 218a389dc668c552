"""The parameters of the monitoring callbacks, declared once and torch-free."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, spec


@dataclass
class GradNormConfig(Schema):
    """Per-layer gradient norms (research.monitoring.grad_norms.GradNormLogger)."""

    targets = ("research.monitoring.grad_norms.GradNormLogger",)
    # Logged at each of the first `first_n_steps` optimizer steps, then every `every_n_steps`.
    every_n_steps: int = spec(50, ge=1)
    first_n_steps: int = spec(0, ge=0)
    # The p of the p-norm; .inf for the largest absolute entry.
    norm_type: float = spec(2.0, gt=0.0)
    # Glob patterns on parameter names (e.g. ["*linear2.weight"]); None logs every parameter.
    params: list[str] | None = None
