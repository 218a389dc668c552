"""The throughput callback in real (tiny) Lightning fits: FLOPs counted on a training batch equal
`measure_flops` of the network on the meta device, rates agree with each other, MFU only with a
peak, and the values reach the CSV logger."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from lightning.fabric.utilities.throughput import measure_flops
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, Dataset

from research import compat
from research.callbacks.throughput import (
    ThroughputLog,
    batch_tokens,
    compute_dtype,
    device_peak_flops,
)
from research.models.cnn import CNN
from research.models.transformer import CausalLanguageModel

BATCH, STEPS = 4, 3


class Images(Dataset):
    def __len__(self) -> int:
        return BATCH * STEPS

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(1, 8, 8), torch.tensor(i % 10)


class Tokens(Dataset):
    def __len__(self) -> int:
        return BATCH * STEPS

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        mask = torch.ones(16, dtype=torch.long)
        mask[12 + i % 4 :] = 0  # 12..15 real tokens
        return {"input_ids": torch.randint(1, 20, (16,)), "attention_mask": mask}


class Fit(L.LightningModule):
    """A network with cross-entropy on (images, labels) or next-token prediction."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        if isinstance(batch, dict):
            logits = self.net(batch["input_ids"])
            return nn.functional.cross_entropy(logits.flatten(0, 1), batch["input_ids"].flatten())
        images, labels = batch
        return nn.functional.cross_entropy(self.net(images), labels)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def fit(module: L.LightningModule, data: Dataset, tmp_path: Path, **params: Any) -> ThroughputLog:
    callback = ThroughputLog(**params)
    trainer = L.Trainer(
        max_epochs=1,
        log_every_n_steps=1,
        logger=CSVLogger(tmp_path),
        callbacks=[callback],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
    )
    trainer.fit(module, DataLoader(data, batch_size=BATCH))
    return callback


def logged(tmp_path: Path) -> list[dict[str, float]]:
    (path,) = tmp_path.glob("**/metrics.csv")
    with path.open() as f:
        return [{k: float(v) for k, v in row.items() if v} for row in csv.DictReader(f)]


def meta_flops(make: Any, inputs: torch.Tensor) -> int:
    """Forward + backward FLOPs of a fresh network of the same shape on the meta device."""
    with torch.device("meta"):
        net = make()
        x = torch.empty_like(inputs, device="meta")
    return measure_flops(net, lambda: net(x), loss_fn=torch.Tensor.sum)


def test_cnn_flops_are_measure_flops_and_rates_agree(tmp_path: Path):
    callback = fit(Fit(CNN()), Images(), tmp_path)
    assert callback.flops_per_batch == meta_flops(CNN, torch.zeros(BATCH, 1, 8, 8)) > 0
    rows = logged(tmp_path)
    epochs = [r for r in rows if "throughput/samples_per_s_epoch" in r]
    steps = [r for r in rows if "throughput/samples_per_s" in r]
    assert len(epochs) == 1 and len(steps) == STEPS  # every step: log_every_n_steps=1
    for row in epochs:
        samples_per_s = row["throughput/samples_per_s_epoch"]
        assert samples_per_s > 0
        assert row["throughput/flops_per_step_epoch"] == pytest.approx(callback.flops_per_batch)
        # FLOP/s = FLOPs per step x steps per second (float32 as logged)
        steps_per_s = samples_per_s / BATCH
        expected = callback.flops_per_batch * steps_per_s
        assert row["throughput/flops_per_s_epoch"] == pytest.approx(expected, rel=1e-5)
        assert not any(k.startswith(("throughput/mfu", "throughput/tokens")) for k in row)


def test_transformer_flops_tokens_and_mfu_against_a_set_peak(tmp_path: Path):
    def make() -> CausalLanguageModel:
        return CausalLanguageModel(vocab_size=20, n_layers=1, d_model=32, n_heads=2, d_ff=64)

    torch.manual_seed(0)
    callback = fit(Fit(make()), Tokens(), tmp_path, peak_flops=1e9)
    assert callback.flops_per_batch == meta_flops(make, torch.zeros(BATCH, 16, dtype=torch.long))
    epochs = [r for r in logged(tmp_path) if "throughput/samples_per_s_epoch" in r]
    tokens = sum(12 + i % 4 for i in range(BATCH * STEPS))  # real tokens of an epoch
    for row in epochs:
        samples_per_s = row["throughput/samples_per_s_epoch"]
        seconds = BATCH * STEPS / samples_per_s
        assert row["throughput/tokens_per_s_epoch"] * seconds == pytest.approx(tokens, rel=1e-4)
        mfu = row["throughput/flops_per_s_epoch"] / 1e9
        assert row["throughput/mfu_epoch"] == pytest.approx(mfu, rel=1e-5)


@pytest.mark.slow
def test_a_compiled_network_compiles_after_the_counted_batch(tmp_path: Path):
    # torch 2.13 and earlier (seen with 2.6.0 and 2.13.0) never compiled a frame first met
    # under FlopCounterMode (pytorch/pytorch#190286): with counting left to them, this network
    # trained eager. On torch 2.14 it passes with or without the callback's `force_eager` stance.
    from torch._dynamo.utils import counters

    def make() -> CausalLanguageModel:
        return CausalLanguageModel(vocab_size=20, n_layers=1, d_model=32, n_heads=2, d_ff=64)

    torch.manual_seed(0)
    net = make()
    net.compile(backend="eager")
    torch._dynamo.reset()
    counters.clear()
    callback = fit(Fit(net), Tokens(), tmp_path)
    assert callback.flops_per_batch == meta_flops(make, torch.zeros(BATCH, 16, dtype=torch.long))
    assert counters["frames"]["ok"] >= 1  # the batches after the counted one ran compiled
    torch._dynamo.reset()


def test_no_flops_when_counting_is_off(tmp_path: Path):
    callback = fit(Fit(CNN()), Images(), tmp_path, count_flops=False, peak_flops=1e9)
    assert callback.flops_per_batch is None
    keys = {k for row in logged(tmp_path) for k in row}
    assert "throughput/samples_per_s" in keys
    assert not any(k.startswith(("throughput/flops", "throughput/mfu")) for k in keys)


def test_tokens_of_a_batch():
    ids = torch.ones(2, 5, dtype=torch.long)
    assert batch_tokens((ids, ids)) is None
    assert batch_tokens({"queries": ["a", "b"]}) is None
    assert batch_tokens({"input_ids": ids}) == 10
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert int(batch_tokens({"input_ids": ids, "attention_mask": mask})) == 8


def test_an_h200_has_the_h100_sxms_dense_peaks(monkeypatch: pytest.MonkeyPatch):
    # No GPU here: torch's name for the device is what the lookup reads.
    h100 = compat.lightning_cuda_peak_flops("h100 sxm")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    cuda = torch.device("cuda", 0)
    assert device_peak_flops(cuda, torch.bfloat16) == h100[torch.bfloat16] == 989.4e12
    assert device_peak_flops(cuda, torch.float16) == h100[torch.float16]
    assert device_peak_flops(cuda, torch.float32) == h100[torch.float32]
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert device_peak_flops(cuda, torch.float32) == h100["tfloat32"]
    finally:
        torch.set_float32_matmul_precision(before)
    assert device_peak_flops(torch.device("cpu"), torch.float32) is None


def test_compute_dtype_follows_the_trainer_precision():
    assert compute_dtype("bf16-mixed") == torch.bfloat16
    assert compute_dtype("16-mixed") == torch.float16
    assert compute_dtype("64-true") == torch.float64
    assert compute_dtype("32-true") == torch.float32


class Texts(Dataset):
    def __len__(self) -> int:
        return BATCH * STEPS

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"queries": f"query {i}", "documents": [f"document {i}", "negative"]}


class TextFit(Fit):
    """Batches of texts, as a retrieval task gets them: only the module can count them."""

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        features = torch.tensor([[float(len(q))] for q in batch["queries"]])
        return self.net(features).square().mean()

    def batch_samples(self, batch: Any) -> int:
        return len(batch["queries"])


def test_samples_of_batches_without_tensors_come_from_the_module(tmp_path: Path):
    callback = fit(TextFit(nn.Linear(1, 1)), Texts(), tmp_path, count_flops=False)
    assert callback.totals is not None and callback.totals.samples == BATCH * STEPS
