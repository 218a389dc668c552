"""Classification of anything a network maps to logits: images now, token sequences later."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torchmetrics import MaxMetric, MeanMetric, MetricCollection
from torchmetrics.classification import MulticlassAccuracy

from research.optim.factory import OptimizerFactory, SchedulerFactory
from research.tasks.base import Task
from research.tasks.configs import ClassificationConfig

# Top-k accuracy is only informative when there are clearly more classes than k.
_TOP_K_MIN_CLASSES = 5


class ClassificationModule(Task):
    """Trains `net` with `loss`; logs loss and accuracy per split and the best `val/acc`.

    Batches are `(inputs, targets)` or a dict with a `labels` entry and the network's keyword
    inputs, so image and text classifiers share this module.
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
        # validate_args=False: the per-step input checks cost more than the update itself.
        acc = MulticlassAccuracy(num_classes, average="micro", validate_args=False)
        metrics = {"acc": acc}
        if num_classes > _TOP_K_MIN_CLASSES and top_k > 1:
            top = MulticlassAccuracy(num_classes, top_k=top_k, average="micro", validate_args=False)
            metrics[f"acc_top{top_k}"] = top
        self.collection = [MetricCollection(metrics)]  # a template, kept out of the module tree
        # Training tracks plain accuracy only: every extra metric is paid on every step.
        self.train_metrics = MetricCollection({"acc": acc.clone()}, prefix="train/")
        self.train_loss = MeanMetric()
        self.eval_suffixes = [""]
        self.val_metrics = self._per_eval_set("val/")
        self.test_metrics = self._per_eval_set("test/")
        # Persistent so a resumed run keeps the best value seen before the interruption.
        self.best_val_acc = MaxMetric()
        self.best_val_acc.persistent(True)

    def _per_eval_set(self, prefix: str) -> nn.ModuleList:
        return nn.ModuleList(
            self.collection[0].clone(prefix=prefix, postfix=suffix or None)
            for suffix in self.eval_suffixes
        )

    def setup(self, stage: str) -> None:
        """A datamodule with several evaluation sets (e.g. sequence lengths) names them in
        `eval_suffixes`, the first being ""; metrics then read `val/acc`, `val/acc@64`, ..."""
        suffixes = list(getattr(self.trainer.datamodule, "eval_suffixes", None) or [""])
        if suffixes != self.eval_suffixes:
            self.eval_suffixes = suffixes
            self.val_metrics = self._per_eval_set("val/")
            self.test_metrics = self._per_eval_set("test/")

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
        self.train_metrics.update(logits.detach(), targets)
        self.train_loss.update(loss.detach())
        self.log_train_loss(loss)
        return loss

    def on_train_epoch_end(self) -> None:
        self.log_dict(self.train_metrics.compute())
        self.log("train/loss_epoch", self.train_loss.compute())
        self.train_metrics.reset()
        self.train_loss.reset()

    def _eval_step(self, split: str, batch: Any, dataloader_idx: int) -> None:
        loss, logits, targets = self._step(batch)
        metrics = self.val_metrics if split == "val" else self.test_metrics
        metrics[dataloader_idx].update(logits, targets)
        name = f"{split}/loss{self.eval_suffixes[dataloader_idx]}"
        # sync_dist: under DDP the epoch mean is over every rank's batches, not rank 0's only.
        self.log(
            name,
            loss,
            on_epoch=True,
            prog_bar=split == "val",
            add_dataloader_idx=False,
            sync_dist=True,
        )

    def _eval_epoch_end(self, split: str) -> dict[str, torch.Tensor]:
        values: dict[str, torch.Tensor] = {}
        for metrics in self.val_metrics if split == "val" else self.test_metrics:
            values.update(metrics.compute())
            metrics.reset()
        self.log_dict(values, prog_bar=split == "val", add_dataloader_idx=False)
        return values

    def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        self._eval_step("val", batch, dataloader_idx)

    def on_validation_epoch_end(self) -> None:
        values = self._eval_epoch_end("val")
        # Only training moves the best value; a standalone validate (research-eval) must not.
        if not self.trainer.sanity_checking and self.trainer.state.fn == "fit":
            self.best_val_acc.update(values["val/acc"])
            self.log("val/acc_best", self.best_val_acc.compute())

    def test_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        self._eval_step("test", batch, dataloader_idx)

    def on_test_epoch_end(self) -> None:
        self._eval_epoch_end("test")
