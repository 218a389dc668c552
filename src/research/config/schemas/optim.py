"""torch's optimizers: the combinations torch would reject are caught here, early."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, fail, spec


@dataclass
class SGD(Schema):
    targets = ("torch.optim.SGD",)
    lr: float = spec(0.001, ge=0.0)
    momentum: float = spec(0.0, ge=0.0)
    dampening: float = spec(0.0)
    weight_decay: float = spec(0.0, ge=0.0)
    nesterov: bool = False
    maximize: bool = False
    foreach: bool | None = None

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
    targets = ("torch.optim.Adam",)
    lr: float = spec(0.001, ge=0.0)
    betas: list[float] = spec([0.9, 0.999])
    eps: float = spec(1e-8, ge=0.0)
    weight_decay: float = spec(0.0, ge=0.0)
    amsgrad: bool = False
    maximize: bool = False
    foreach: bool | None = None
    fused: bool | None = None

    def check(self, at: str) -> None:
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            fail(at, "betas", f"={self.betas} must be two numbers in [0, 1)")


@dataclass
class AdamW(Adam):
    targets = ("torch.optim.AdamW",)
    weight_decay: float = spec(0.01, ge=0.0)
