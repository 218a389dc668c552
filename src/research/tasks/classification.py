"""Classification of anything a network maps to logits: images now, token sequences later."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torchmetrics import MaxMetric

from research.optim.factory import OptimizerFactory, SchedulerFactory
from research.tasks.base import Task
from research.tasks.configs import ClassificationConfig
from research.tasks.running_mean import RunningMean

# Top-k accuracy is only informative when there are clearly more classes than k.
_TOP_K_MIN_CLASSES = 5


def count_correct(logits: torch.Tensor, targets: torch.Tensor, k: int = 1) -> torch.Tensor:
    """How many targets are among their `k` highest logits (the class dimension is 1)."""
    if k == 1:
        return (logits.argmax(1) == targets).sum()
    return (logits.topk(k, dim=1).indices == targets.unsqueeze(1)).any(1).sum()


class ClassificationModule(Task):
    """Trains `net` with `loss`; logs loss and accuracy per split and the best `val/acc`.

    Batches are `(inputs, targets)` or a dict with a `labels` entry and the network's keyword
    inputs, so image and text classifiers share this module. Every split's metrics are running
    sums (research.tasks.running_mean), read and logged once per epoch: a batch pays a few tensor
    adds, not a metric update, and an evaluation batch no `self.log` either.
    """

    def __init__(
        self,
        net: nn.Module,
        loss: nn.Module,
        optimizer: OptimizerFactory,
        scheduler: SchedulerFactory | None = None,
        config: ClassificationConfig | None = None,
        **params: Any,
    ) -> None:
        super().__init__(net, loss, optimizer, scheduler)
        self.config = ClassificationConfig.build(config, params)
        num_classes, top_k = self.config.num_classes, self.config.top_k
        # Accuracy names and their k; training tracks plain accuracy only (paid every step).
        self.eval_ks = {"acc": 1}
        if num_classes > _TOP_K_MIN_CLASSES and top_k > 1:
            self.eval_ks[f"acc_top{top_k}"] = top_k
        self.train_sums = {"acc": RunningMean(), "loss": RunningMean()}
        self.eval_suffixes = [""]
        self.eval_sums = self._eval_sums()
        # Persistent so a resumed run keeps the best value seen before the interruption.
        self.best_val_acc = MaxMetric()
        self.best_val_acc.persistent(True)

    def _eval_sums(self) -> dict[str, list[dict[str, RunningMean]]]:
        """Per split ("val", "test"), per evaluation set: loss and each accuracy."""
        names = ["loss", *self.eval_ks]
        return {
            split: [{name: RunningMean() for name in names} for _ in self.eval_suffixes]
            for split in ("val", "test")
        }

    def setup(self, stage: str) -> None:
        """A datamodule with several evaluation sets (e.g. sequence lengths) names them in
        `eval_suffixes`, the first being ""; metrics then read `val/acc`, `val/acc@64`, ..."""
        suffixes = list(getattr(self.trainer.datamodule, "eval_suffixes", None) or [""])
        if suffixes != self.eval_suffixes:
            self.eval_suffixes = suffixes
            self.eval_sums = self._eval_sums()

    def forward(self, inputs: Any) -> torch.Tensor:
        return self.net(**inputs) if isinstance(inputs, dict) else self.net(inputs)

    def _step(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if isinstance(batch, dict):
            inputs = dict(batch)
            targets = inputs.pop("labels")
        else:
            inputs, targets = batch
        logits = self(inputs)
        return self.loss(logits, targets), logits, targets

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        loss, logits, targets = self._step(batch)
        self.train_sums["acc"].update(count_correct(logits.detach(), targets), targets.numel())
        self.train_sums["loss"].update(loss)  # count 1: the mean over batches
        self.log_train_loss(loss)
        return loss

    def _log_means(self, means: dict[str, RunningMean], prog_bar: bool) -> dict[str, Any]:
        """Log each running mean under its name, reset it, and return the values."""
        values = {name: mean.compute(self.trainer.strategy) for name, mean in means.items()}
        for mean in means.values():
            mean.reset()
        # Already the mean over every rank: sync_dist only tells Lightning so (no DDP warning).
        self.log_dict(values, prog_bar=prog_bar, sync_dist=True, add_dataloader_idx=False)
        return values

    def on_train_epoch_end(self) -> None:
        sums = self.train_sums
        self._log_means({"train/acc": sums["acc"], "train/loss_epoch": sums["loss"]}, False)

    def _eval_step(self, split: str, batch: Any, dataloader_idx: int) -> None:
        loss, logits, targets = self._step(batch)
        sums = self.eval_sums[split][dataloader_idx]
        # The loss is a mean over the batch's examples: weighted by their number, the epoch
        # value is the mean over examples, as Lightning's epoch mean of a logged loss is.
        sums["loss"].update(loss * len(targets), len(targets))
        for name, k in self.eval_ks.items():
            sums[name].update(count_correct(logits, targets, k), targets.numel())

    def _eval_epoch_end(self, split: str) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for suffix, sums in zip(self.eval_suffixes, self.eval_sums[split], strict=True):
            named = {f"{split}/{name}{suffix}": mean for name, mean in sums.items()}
            values.update(self._log_means(named, prog_bar=split == "val"))
        return values

    def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        self._eval_step("val", batch, dataloader_idx)

    def on_validation_epoch_end(self) -> None:
        values = self._eval_epoch_end("val")
        if self.trainer.state.fn != "fit":
            return  # a standalone validate (research-eval) has no best value
        if self.trainer.sanity_checking:
            # Logged (never to a logger), not kept: the check of monitored metrics sees every
            # key a validation logs, and only training moves the best value.
            self.log("val/acc_best", values["val/acc"])
            return
        self.best_val_acc.update(values["val/acc"])
        self.log("val/acc_best", self.best_val_acc.compute())

    def test_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        self._eval_step("test", batch, dataloader_idx)

    def on_test_epoch_end(self) -> None:
        self._eval_epoch_end("test")
