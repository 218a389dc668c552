"""The parameters of the framework's optional callbacks, declared once and torch-free."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, spec


@dataclass
class ProgressLogConfig(Schema):
    """Progress as log lines when stdout is not a terminal (research.callbacks.progress)."""

    targets = ("research.callbacks.progress.ProgressLog",)
    every_n_steps: int = spec(50, ge=1)
    """A line every this many optimizer steps, or every `every_s` seconds if that comes first."""
    every_s: float = spec(30.0, gt=0.0)
    """A line every this many seconds, or every `every_n_steps` steps if that comes first."""
    always: bool = False
    """Also when stdout is a terminal (where the progress bar already shows it)."""


@dataclass
class GradNormConfig(Schema):
    """Per-layer gradient norms (research.callbacks.grad_norms.GradNormLogger)."""

    targets = ("research.callbacks.grad_norms.GradNormLogger",)
    every_n_steps: int = spec(50, ge=1)
    """Log at every optimizer step that is a multiple of this (after the first_n_steps)."""
    first_n_steps: int = spec(0, ge=0)
    """Log at each of the first this many optimizer steps, then every `every_n_steps`; 0: none."""
    norm_type: float = spec(2.0, gt=0.0)
    """The p of the p-norm; .inf for the largest absolute entry."""
    params: list[str] | None = None
    """Glob patterns on parameter names (e.g. ["*linear2.weight"]); null logs every parameter."""


@dataclass
class ThroughputConfig(Schema):
    """Throughput and MFU of training (research.callbacks.throughput.ThroughputLog)."""

    targets = ("research.callbacks.throughput.ThroughputLog",)
    peak_flops: float | None = spec(None, gt=0.0)
    """Peak FLOP/s of one device, for MFU; null: Lightning's table for the GPU in use at the
    trainer's precision (none on CPU or an unknown GPU, and then no MFU is logged)."""
    count_flops: bool = True
    """Count the FLOPs of the first training batch (forward, loss, backward) with torch's
    FlopCounterMode; false logs no FLOPs and no MFU."""
