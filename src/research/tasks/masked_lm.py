"""Masked language modelling (Devlin et al. 2019): BERT's 80/10/10 corruption of a random
`mask_rate` of the real tokens; the loss, accuracy and perplexity count masked positions only."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torchmetrics import MeanMetric

from research.optim.factory import OptimizerFactory, SchedulerFactory
from research.tasks.base import Task
from research.tasks.configs import MaskedLMConfig

IGNORE = -100


def mask_tokens(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    mask_rate: float,
    mask_token_id: int,
    vocab_size: int,
    special_ids: tuple[int, ...],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Corrupted inputs and labels (IGNORE where not chosen). Of the chosen tokens, 80% become
    [MASK], 10% a random token and 10% stay, so the model cannot rely on seeing [MASK]."""
    candidates = attention_mask.bool()
    for special in special_ids:
        candidates &= input_ids != special
    chosen = candidates & (torch.rand(input_ids.shape, device=input_ids.device) < mask_rate)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    roll = torch.rand(input_ids.shape, device=input_ids.device)
    corrupted = input_ids.clone()
    corrupted[chosen & (roll < 0.8)] = mask_token_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    corrupted[swap] = torch.randint(
        len(special_ids), vocab_size, (int(swap.sum()),), device=input_ids.device
    )
    return corrupted, labels


class MaskedLMModule(Task):
    """Logs `<split>/loss`, `<split>/acc` (masked-token accuracy) and `<split>/ppl`."""

    def __init__(
        self,
        net: nn.Module,
        loss: nn.Module | None,
        optimizer: OptimizerFactory,
        scheduler: SchedulerFactory | None = None,
        config: MaskedLMConfig | None = None,
        **params: Any,
    ) -> None:
        # The configured loss (loss=cross_entropy ignores -100, the unmasked positions).
        super().__init__(
            net, loss or nn.CrossEntropyLoss(ignore_index=IGNORE), optimizer, scheduler
        )
        self.config = c = MaskedLMConfig.build(config, params)
        self.mask_rate, self.mask_token_id = c.mask_rate, c.mask_token_id
        self.vocab_size, self.special_ids = c.vocab_size, tuple(c.special_ids)
        # Keys get a suffix: "train" would shadow nn.Module.train.
        self.losses = nn.ModuleDict({f"{s}_": MeanMetric() for s in ("train", "val", "test")})
        self.accs = nn.ModuleDict({f"{s}_": MeanMetric() for s in ("train", "val", "test")})

    def _step(self, batch: dict[str, torch.Tensor], split: str) -> torch.Tensor:
        inputs, labels = mask_tokens(
            batch["input_ids"],
            batch["attention_mask"],
            self.mask_rate,
            self.mask_token_id,
            self.vocab_size,
            self.special_ids,
        )
        logits = self.net(inputs, batch["attention_mask"])
        loss = self.loss(logits.flatten(0, 1).float(), labels.flatten())
        chosen = labels != IGNORE
        count = int(chosen.sum())
        if count:
            self.losses[f"{split}_"].update(loss.detach(), weight=count)
            correct = (logits.argmax(-1)[chosen] == labels[chosen]).float().mean()
            self.accs[f"{split}_"].update(correct, weight=count)
        return loss

    def _log_epoch(self, split: str) -> None:
        loss = self.losses[f"{split}_"].compute()
        self.log_dict(
            {
                f"{split}/loss" + ("_epoch" if split == "train" else ""): loss,
                f"{split}/acc": self.accs[f"{split}_"].compute(),
                f"{split}/ppl": torch.exp(loss.clamp(max=math.log(1e6))),
            },
            prog_bar=split == "val",
        )
        self.losses[f"{split}_"].reset()
        self.accs[f"{split}_"].reset()

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self._step(batch, "train")
        self.log_train_loss(loss)
        return loss

    def on_train_epoch_end(self) -> None:
        self._log_epoch("train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "val")

    def on_validation_epoch_end(self) -> None:
        self._log_epoch("val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "test")

    def on_test_epoch_end(self) -> None:
        self._log_epoch("test")
