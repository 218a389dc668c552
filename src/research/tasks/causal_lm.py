"""Causal (next-token) language modelling, evaluated at several lengths over the same tokens.

Logs per split and evaluation length (suffix "" at the training context, "@<n>" otherwise, as
the datamodule's `eval_suffixes` say): `<split>/loss` (nats per token), `<split>/ppl` and, when
the datamodule knows its bytes per token, `<split>/bpb` (bits per UTF-8 byte, comparable across
tokenizers).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torchmetrics import MeanMetric

from research.config.errors import ConfigError
from research.optim.factory import OptimizerFactory, SchedulerFactory
from research.tasks.base import Task
from research.tasks.configs import CausalLMConfig


def load_net_weights(net: nn.Module, path: Path) -> None:
    """Start `net` from the network weights of a Lightning checkpoint (read weights-only)."""
    from research.tracking.checkpoints import read_checkpoint

    state = read_checkpoint(path.expanduser())["state_dict"]
    weights = {k.removeprefix("net."): v for k, v in state.items() if k.startswith("net.")}
    try:
        net.load_state_dict(weights)
    except RuntimeError as err:
        first = str(err).strip().splitlines()[0][:160]
        message = f"model.init_from={str(path)!r} does not fit this network ({first})"
        raise ConfigError(message) from None


class CausalLMModule(Task):
    """Trains `net` (a CausalLanguageModel) on windows of n + 1 tokens: inputs are the first n,
    targets the last n; the loss is the configured cross-entropy, averaged over tokens."""

    def __init__(
        self,
        net: nn.Module,
        loss: nn.Module | None,
        optimizer: OptimizerFactory,
        scheduler: SchedulerFactory | None = None,
        config: CausalLMConfig | None = None,
        **params: Any,
    ) -> None:
        super().__init__(net, loss or nn.CrossEntropyLoss(), optimizer, scheduler)
        self.config = CausalLMConfig.build(config, params)
        if self.config.init_from:
            load_net_weights(self.net, Path(self.config.init_from))
        self.eval_suffixes = [""]
        self.bytes_per_token: dict[str, float] = {}
        self.losses = self._loss_metrics()

    def _loss_metrics(self) -> nn.ModuleDict:
        # Keys get a suffix index: "train" alone would shadow nn.Module.train.
        names = ["train_0"] + [
            f"{s}_{i}" for s in ("val", "test") for i in range(len(self.eval_suffixes))
        ]
        return nn.ModuleDict({name: MeanMetric() for name in names})

    def setup(self, stage: str) -> None:
        data = getattr(self.trainer, "datamodule", None)
        suffixes = list(getattr(data, "eval_suffixes", None) or [""])
        if suffixes != self.eval_suffixes:
            self.eval_suffixes = suffixes
            self.losses = self._loss_metrics()
        self.bytes_per_token = dict(getattr(data, "bytes_per_token", None) or {})

    def _step(self, batch: dict[str, torch.Tensor], metric: str) -> torch.Tensor:
        ids = batch["input_ids"]
        logits = self.net(ids[:, :-1])
        targets = ids[:, 1:]
        loss = self.loss(logits.flatten(0, 1).float(), targets.flatten())
        self.losses[metric].update(loss.detach(), weight=targets.numel())
        return loss

    def _log_split(self, split: str) -> None:
        values = {}
        for index, suffix in enumerate(self.eval_suffixes if split != "train" else [""]):
            metric = self.losses[f"{split}_{index}"]
            loss = metric.compute()
            metric.reset()
            values[f"{split}/loss{suffix}" + ("_epoch" if split == "train" else "")] = loss
            values[f"{split}/ppl{suffix}"] = torch.exp(loss.clamp(max=math.log(1e9)))
            if split in self.bytes_per_token:
                values[f"{split}/bpb{suffix}"] = loss / math.log(2) / self.bytes_per_token[split]
        self.log_dict(values, prog_bar=split == "val", add_dataloader_idx=False)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self._step(batch, "train_0")
        self.log_train_loss(loss)
        return loss

    def on_train_epoch_end(self) -> None:
        self._log_split("train")

    def validation_step(
        self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._step(batch, f"val_{dataloader_idx}")

    def on_validation_epoch_end(self) -> None:
        self._log_split("val")

    def test_step(
        self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._step(batch, f"test_{dataloader_idx}")

    def on_test_epoch_end(self) -> None:
        self._log_split("test")
