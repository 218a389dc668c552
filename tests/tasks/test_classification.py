"""The classification module through a real Lightning Trainer on tiny random data."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import lightning as L
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from research.config.registry import declaration
from research.models.cnn import CNN
from research.optim.schedulers import linear_with_warmup
from research.tasks.classification import ClassificationModule, count_correct

LR = 1e-2


def _loader(n: int = 32, classes: int = 10, batch: int = 8, seed: int = 0) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(n, 1, 8, 8, generator=generator)
    return DataLoader(TensorDataset(images, torch.arange(n) % classes), batch_size=batch)


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
    optimizer = partial(torch.optim.Adam, lr=LR)
    return ClassificationModule(
        net, nn.CrossEntropyLoss(), optimizer, num_classes=classes, **kwargs
    )


def test_fit_validate_and_test_log_the_contract_metric_names():
    module = _module()
    trainer = _trainer(
        max_epochs=2, limit_train_batches=2, limit_val_batches=2, log_every_n_steps=1
    )
    trainer.fit(module, _loader(), _loader(seed=1))
    assert {
        "train/loss",
        "train/acc",
        "val/loss",
        "val/acc",
        "val/acc_best",
        "val/acc_top3",
    } <= set(trainer.callback_metrics)
    (validated,) = trainer.validate(module, _loader(seed=1), verbose=False)
    assert {"val/loss", "val/acc", "val/acc_top3"} <= set(validated)
    assert declaration("research.tasks.classification.ClassificationModule").monitor in validated
    (tested,) = trainer.test(module, _loader(seed=2), verbose=False)
    assert set(tested) == {"test/loss", "test/acc", "test/acc_top3"}
    assert 0.0 <= tested["test/acc"] <= tested["test/acc_top3"] <= 1.0


def test_val_acc_best_is_the_maximum_over_epochs():
    seen = []

    class Record(L.Callback):
        def on_validation_end(self, trainer, module):
            seen.append(float(trainer.callback_metrics["val/acc"]))

    trainer = _trainer(max_epochs=3, num_sanity_val_steps=0, callbacks=[Record()])
    trainer.fit(_module(), _loader(), _loader(seed=1))
    assert len(seen) == 3
    assert float(trainer.callback_metrics["val/acc_best"]) == pytest.approx(max(seen))


@pytest.mark.parametrize(("classes", "has_top3"), [(4, False), (5, False), (6, True)])
def test_top3_accuracy_only_with_more_than_five_classes(classes: int, has_top3: bool):
    module = _module(classes=classes)
    trainer = _trainer(limit_train_batches=1, limit_val_batches=1)
    trainer.fit(module, _loader(classes=classes), _loader(classes=classes))
    assert ("val/acc_top3" in trainer.callback_metrics) is has_top3
    (tested,) = trainer.test(module, _loader(classes=classes), verbose=False)
    assert ("test/acc_top3" in tested) is has_top3


class LearningRates(L.Callback):
    """The lr each training batch runs with, and the lr left after fitting."""

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])

    def on_train_end(self, trainer, module):
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])


def test_scheduler_partial_is_stepped_every_optimizer_step_over_the_whole_fit():
    """2 epochs x 4 batches = 8 steps: warmup 1/3, 2/3, 1, then linear decay to 0 at step 8."""
    lrs = LearningRates()
    module = _module(scheduler=partial(linear_with_warmup, warmup_steps=3))
    trainer = _trainer(max_epochs=2, limit_train_batches=4, callbacks=[lrs])
    trainer.fit(module, _loader())
    factors = [1 / 3, 2 / 3, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2, 0.0]
    assert lrs.lrs == pytest.approx([LR * f for f in factors])


def test_scheduler_counts_optimizer_steps_not_batches():
    """With two batches per optimizer step, 8 batches are 4 steps: the lr changes every other."""
    lrs = LearningRates()
    module = _module(scheduler=partial(linear_with_warmup, warmup_steps=2))
    trainer = _trainer(max_epochs=2, limit_train_batches=4, accumulate_grad_batches=2)
    trainer.callbacks.append(lrs)
    trainer.fit(module, _loader())
    factors = [0.5, 0.5, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.0]
    assert lrs.lrs == pytest.approx([LR * f for f in factors])


def test_without_a_scheduler_the_lr_stays_constant():
    lrs = LearningRates()
    _trainer(limit_train_batches=3, callbacks=[lrs]).fit(_module(), _loader())
    assert lrs.lrs == [LR] * 4


class KeywordNet(nn.Module):
    """A text-style network: it only accepts its inputs as keywords."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.EmbeddingBag(10, 3, mode="sum")

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.embed(input_ids, per_sample_weights=attention_mask.float())


def _dict_batches(count: int) -> list[dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [
        {
            "input_ids": torch.randint(0, 10, (8, 5), generator=generator),
            "attention_mask": torch.ones(8, 5, dtype=torch.long),
            "labels": torch.arange(8) % 3,
        }
        for _ in range(count)
    ]


def test_dict_batches_with_labels_reach_the_network_as_keywords():
    module = ClassificationModule(
        KeywordNet(), nn.CrossEntropyLoss(), partial(torch.optim.SGD, lr=0.1), num_classes=3
    )
    before = module.net.embed.weight.detach().clone()
    loader = DataLoader(_dict_batches(3), batch_size=None)
    trainer = _trainer(log_every_n_steps=1)
    trainer.fit(module, loader, loader)
    assert not torch.equal(before, module.net.embed.weight)
    assert {"train/loss", "val/loss", "val/acc"} <= set(trainer.callback_metrics)
    (tested,) = trainer.test(module, loader, verbose=False)
    assert 0.0 <= tested["test/acc"] <= 1.0


def test_best_val_acc_is_persistent_state():
    assert "best_val_acc.max_value" in _module().state_dict()


def test_best_val_acc_survives_a_checkpoint_resume(tmp_path: Path):
    """A resumed run must not forget a best value reached before the interruption."""
    module = _module()
    trainer = _trainer(limit_train_batches=1, num_sanity_val_steps=0)
    trainer.fit(module, _loader(), _loader(seed=1))
    module.best_val_acc.update(torch.tensor(0.99))  # a best the random data cannot reach again
    trainer.save_checkpoint(tmp_path / "last.ckpt")

    resumed = _module()
    trainer = _trainer(max_epochs=2, limit_train_batches=1, num_sanity_val_steps=0)
    trainer.fit(resumed, _loader(), _loader(seed=1), ckpt_path=tmp_path / "last.ckpt")
    assert trainer.current_epoch == 2
    assert float(trainer.callback_metrics["val/acc"]) < 0.99
    assert float(trainer.callback_metrics["val/acc_best"]) == pytest.approx(0.99)


def test_overfits_32_fixed_samples_in_50_steps():
    torch.manual_seed(0)
    module = _module()
    trainer = _trainer(max_steps=50, max_epochs=-1)
    trainer.fit(module, _loader(n=32, batch=32))
    assert trainer.global_step == 50
    assert float(trainer.callback_metrics["train/acc"]) == 1.0


def test_each_evaluation_length_gets_its_own_metrics():
    from research.data.recall import AssociativeRecallDataModule
    from research.models.transformer import SequenceClassifier

    data = AssociativeRecallDataModule(
        num_pairs=4, eval_num_pairs=[8], train_size=64, val_size=32, test_size=32, batch_size=32
    )
    net = SequenceClassifier(
        num_classes=16, vocab_size=data.vocab_size, d_model=16, n_layers=1, n_heads=2
    )
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


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("shape", [(64, 7), (16, 7, 5)])
def test_count_correct_agrees_with_torchmetrics_accuracy(k: int, shape: tuple[int, ...]):
    from torchmetrics.classification import MulticlassAccuracy

    generator = torch.Generator().manual_seed(k)
    logits = torch.randn(*shape, generator=generator)
    targets = torch.randint(0, shape[1], (shape[0], *shape[2:]), generator=generator)
    reference = MulticlassAccuracy(shape[1], top_k=k, average="micro")(logits, targets)
    assert float(count_correct(logits, targets, k)) / targets.numel() == pytest.approx(
        float(reference)
    )


def test_epoch_metrics_are_over_every_example_when_the_last_batch_is_smaller():
    """27 examples in batches of 8 (8, 8, 8, 3): the epoch values are those of the whole set."""
    module = _module()
    data = _loader(n=27, batch=8, seed=3)
    (tested,) = _trainer().test(module, data, verbose=False)
    images, targets = data.dataset.tensors
    with torch.no_grad():
        logits = module.net.eval()(images)
    assert tested["test/loss"] == pytest.approx(float(nn.functional.cross_entropy(logits, targets)))
    assert tested["test/acc"] == pytest.approx(float((logits.argmax(1) == targets).float().mean()))
    top3 = (logits.topk(3, dim=1).indices == targets[:, None]).any(1).float().mean()
    assert tested["test/acc_top3"] == pytest.approx(float(top3))
