"""torch's optimizers: the combinations torch would reject are caught here, early."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, fail, spec


@dataclass
class SGD(Schema):
    """torch.optim.SGD, as the optimizer group configures it."""

    targets = ("torch.optim.SGD",)
    lr: float = spec(0.001, ge=0.0)
    """Learning rate (the base value a scheduler scales)."""
    momentum: float = spec(0.0, ge=0.0)
    """Momentum factor; 0: plain SGD."""
    dampening: float = spec(0.0)
    """Each gradient enters the momentum buffer scaled by 1 - dampening; nesterov needs 0."""
    weight_decay: float = spec(0.0, ge=0.0)
    """L2 penalty: weight_decay x the parameter is added to its gradient."""
    nesterov: bool = False
    """Nesterov momentum; needs momentum > 0 and dampening 0."""
    maximize: bool = spec(False, id_if_changed=True)
    """Maximise the objective instead of minimising it."""
    foreach: bool | None = spec(None, id_if_changed=True)
    """Multi-tensor (foreach) implementation: faster, more peak memory; null: used on CUDA."""

    def check(self, at: str) -> None:
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            fail(
                at,
                "nesterov",
                "=true needs momentum > 0 and dampening = 0 "
                f"(got momentum={self.momentum}, dampening={self.dampening})",
            )


@dataclass
class Adam(Schema):
    """torch.optim.Adam, as the optimizer group configures it."""

    targets = ("torch.optim.Adam",)
    lr: float = spec(0.001, ge=0.0)
    """Learning rate (the base value a scheduler scales)."""
    betas: list[float] = spec([0.9, 0.999])
    """Decay rates of the running averages of the gradient and of its square."""
    eps: float = spec(1e-8, ge=0.0)
    """Added to the denominator for numerical stability."""
    weight_decay: float = spec(0.0, ge=0.0)
    """L2 penalty added to the gradient, so Adam's scaling applies to it (AdamW decouples it)."""
    amsgrad: bool = False
    """AMSGrad: divide by the maximum of the past squared-gradient averages."""
    maximize: bool = spec(False, id_if_changed=True)
    """Maximise the objective instead of minimising it."""
    foreach: bool | None = spec(None, id_if_changed=True)
    """Multi-tensor (foreach) implementation: faster, more peak memory; null: used on CUDA."""
    fused: bool | None = spec(None, id_if_changed=True)
    """Fused-kernel implementation, typically the fastest; null: not fused (foreach on CUDA)."""

    def check(self, at: str) -> None:
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            fail(at, "betas", f"={self.betas} must be two numbers in [0, 1)")


@dataclass
class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (Loshchilov & Hutter 2019)."""

    targets = ("torch.optim.AdamW",)
    weight_decay: float = spec(0.01, ge=0.0)
    """Decoupled weight decay: each step multiplies the weights by 1 - lr x weight_decay."""
