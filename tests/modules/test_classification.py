"""The classification module through a real Lightning Trainer on tiny random data."""

from __future__ import annotations

from functools import partial

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from research.models.cnn import CNN
from research.modules.classification import ClassificationModule
from research.optim.schedulers import linear_with_warmup


def _loader(n: int = 64, classes: int = 10, batch: int = 16) -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 1, 8, 8, generator=generator)
    return DataLoader(TensorDataset(x, torch.arange(n) % classes), batch_size=batch)


def _trainer(**kwargs) -> L.Trainer:
    options = dict(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        max_epochs=1,
    )
    return L.Trainer(**{**options, **kwargs})


def _module(classes: int = 10, **kwargs) -> ClassificationModule:
    net = CNN(num_classes=classes, channels=[8], kernel_sizes=[3], hidden_sizes=[16])
    return ClassificationModule(
        net,
        nn.CrossEntropyLoss(),
        partial(torch.optim.Adam, lr=1e-2),
        num_classes=classes,
        **kwargs,
    )


def test_logs_the_contract_metric_names():
    trainer = _trainer(max_epochs=2)
    module = _module()
    trainer.fit(module, _loader(), _loader())
    keys = set(trainer.callback_metrics)
    assert {"train/loss_epoch", "train/acc", "val/loss", "val/acc", "val/acc_best"} <= keys
    assert "val/acc_top3" in keys
    (tested,) = trainer.test(module, _loader(), verbose=False)
    assert {"test/acc", "test/acc_top3", "test/loss"} <= set(tested)


def test_top_k_only_with_more_than_five_classes():
    trainer = _trainer()
    trainer.fit(_module(classes=4), _loader(classes=4), _loader(classes=4))
    assert not any("top" in key for key in trainer.callback_metrics)


def test_scheduler_partial_is_stepped_every_optimizer_step():
    module = _module(scheduler=partial(linear_with_warmup, warmup_steps=100))
    trainer = _trainer(max_steps=7)
    trainer.fit(module, _loader(n=160))
    assert trainer.optimizers[0].param_groups[0]["lr"] == 1e-2 * 8 / 100


class KeywordNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.linear(features)


def test_dict_batches_with_labels_reach_the_network_as_keywords():
    batches = [{"features": torch.randn(8, 4), "labels": torch.arange(8) % 3} for _ in range(3)]
    module = ClassificationModule(
        KeywordNet(), nn.CrossEntropyLoss(), partial(torch.optim.SGD, lr=0.1), num_classes=3
    )
    loader = DataLoader(batches, batch_size=None)
    (tested,) = _trainer().test(module, loader, verbose=False)
    assert 0.0 <= tested["test/acc"] <= 1.0


def test_best_val_acc_is_saved_for_resume():
    assert any(key.startswith("best_val_acc") for key in _module().state_dict())


def test_overfits_a_fixed_batch():
    torch.manual_seed(0)
    module = _module()
    trainer = _trainer(max_epochs=60)
    trainer.fit(module, _loader(n=32, batch=32))
    assert trainer.callback_metrics["train/acc"] == 1.0


def test_each_evaluation_length_gets_its_own_metrics():
    from research.data.synthetic import AssociativeRecallDataModule
    from research.models.transformer import SequenceClassifier

    data = AssociativeRecallDataModule(
        num_pairs=4, eval_num_pairs=[8], train_size=64, val_size=32, test_size=32, batch_size=32
    )
    net = SequenceClassifier(16, vocab_size=data.vocab_size, d_model=16, n_layers=1, n_heads=2)
    module = ClassificationModule(
        net, nn.CrossEntropyLoss(), partial(torch.optim.Adam, lr=1e-3), num_classes=16
    )
    trainer = _trainer()
    trainer.fit(module, datamodule=data)
    assert {"val/acc", "val/acc@17", "val/loss", "val/loss@17", "val/acc_best"} <= set(
        trainer.callback_metrics
    )
    tested = {
        k: v
        for result in trainer.test(module, datamodule=data, verbose=False)
        for k, v in result.items()
    }
    assert {"test/acc", "test/acc@17", "test/acc_top3@17"} <= set(tested)
