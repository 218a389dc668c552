"""Per-layer gradient norms of a training run, logged every n optimizer steps.

Built on Lightning's `grad_norm` utility (one norm per parameter and their total). The names are
regrouped by layer: the first integer in a parameter's dotted name is its layer index, so
`net.encoder.blocks.3.linear2.weight` is logged as `grad_norm/layer_3/linear2.weight`; a
parameter outside any numbered container keeps its name (`grad_norm/net.encoder.embed.weight`).
"""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.utilities import grad_norm
from torch.optim import Optimizer

from research.callbacks.configs import GradNormConfig
from research.tracking.run_dir import GRAD_NORM_FILE, read_history
from research.utils.atomic import write_atomic

PREFIX = "grad_norm"


def layer_key(name: str) -> str:
    """`a.b.3.c.weight` -> `grad_norm/layer_3/c.weight`; no integer part -> `grad_norm/<name>`."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return f"{PREFIX}/layer_{part}/{'.'.join(parts[i + 1 :])}"
    return f"{PREFIX}/{name}"


def layer_grad_norms(
    module: torch.nn.Module, norm_type: float = 2.0, params: list[str] | None = None
) -> dict[str, float]:
    """The gradient norm of every parameter (matching one of the glob `params`, if given) keyed
    by layer, plus `grad_norm/total` over all gradients (the one gradient clipping sees)."""
    norms = grad_norm(module, norm_type, group_separator="/")
    norms.pop(f"grad_{float(norm_type)}_norm_total", None)  # float32; redone in float64 below
    prefix = f"grad_{float(norm_type)}_norm/"
    values = torch.stack(list(norms.values())).double().tolist() if norms else []
    named = {key.removeprefix(prefix): value for key, value in zip(norms, values, strict=True)}
    logged = {layer_key(n): v for n, v in named.items() if not params or _matches(n, params)}
    if named:
        logged[f"{PREFIX}/total"] = _total(list(named.values()), float(norm_type))
    return logged


def _total(norms: list[float], norm_type: float) -> float:
    """The norm of all gradients as one vector, from the per-parameter norms."""
    if math.isinf(norm_type):
        return max(norms)
    return math.fsum(n**norm_type for n in norms) ** (1.0 / norm_type)


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


class GradNormLogger(L.Callback):
    """Logs per-layer gradient norms to every logger (W&B, CSV) and to `grad_norms.jsonl` in the
    run dir, at every one of the first `first_n_steps` optimizer steps and then every
    `every_n_steps`. The norms are taken before the optimizer step and before gradient clipping
    (AMP's loss scale already removed), i.e. the gradient the loss produced. Off the logged steps
    it costs nothing; on them, one norm per parameter and a single device-to-host copy.
    """

    def __init__(self, config: GradNormConfig | None = None, **params: Any) -> None:
        self.config = GradNormConfig.build(config, params)
        self.path: Path | None = None

    def due(self, step: int) -> bool:
        return step < self.config.first_n_steps or step % self.config.every_n_steps == 0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Rows of steps a resumed run will redo are dropped."""
        if not trainer.is_global_zero:
            return
        self.path = Path(trainer.default_root_dir) / GRAD_NORM_FILE
        rows = read_history(self.path.parent, GRAD_NORM_FILE)
        kept = [r for r in rows if r.get("step", 0) < trainer.global_step]
        write_atomic(self.path, "".join(json.dumps(r) + "\n" for r in kept))

    def on_before_optimizer_step(
        self, trainer: L.Trainer, pl_module: L.LightningModule, optimizer: Optimizer
    ) -> None:
        step = trainer.global_step
        if trainer.sanity_checking or not self.due(step):
            return
        norms = layer_grad_norms(pl_module, self.config.norm_type, self.config.params)
        if not norms:
            return
        for logger in trainer.loggers:
            logger.log_metrics(norms, step=step)
        if self.path is not None:
            row: dict[str, Any] = {"step": step, "epoch": trainer.current_epoch, **norms}
            with self.path.open("a") as f:
                f.write(json.dumps(row) + "\n")
