"""The gradient-norm callback in real training runs: keys, steps and values against a gradient
worked out by hand, in the loggers (CSV in process; W&B's offline log after a CLI run, which has
flushed it by exiting) and in the run's grad_norms.jsonl."""

from __future__ import annotations

import csv
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from research.callbacks.grad_norms import GradNormLogger, layer_key
from research.tracking.run_dir import GRAD_NORM_FILE, read_history
from research.tracking.wandb_reader import read_offline_run
from tests.helpers.cli import FAST, run_cli, run_dirs, wandb_written

LR, STEPS = 0.1, 5
X = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1], [2.0, 0.1, 0.4], [-0.6, 1.5, 0.9]])
T = np.array([[0.5, -1.0], [1.0, 0.2], [-0.3, 0.8], [0.0, 1.5]])
W1 = np.arange(12, dtype=float).reshape(4, 3) / 10 - 0.5
W2 = np.arange(8, dtype=float).reshape(2, 4) / 8 - 0.4


class TwoLinear(L.LightningModule):
    """y = scale * (x W1^T) W2^T with MSE: small enough to differentiate by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 4, bias=False), nn.Linear(4, 2, bias=False)])
        self.scale = nn.Parameter(torch.tensor(1.5))
        self.double()  # before copying, so the weights are exactly W1 and W2
        with torch.no_grad():
            self.layers[0].weight.copy_(torch.from_numpy(W1))
            self.layers[1].weight.copy_(torch.from_numpy(W2))

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, t = batch
        y = self.scale * self.layers[1](self.layers[0](x))
        return nn.functional.mse_loss(y, t)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=LR)


def hand_norms(steps: int) -> list[dict[str, float]]:
    """Per step: the gradient norms of W1, W2 and scale from the chain rule, then an SGD step."""
    w1, w2, s = W1.copy(), W2.copy(), 1.5
    out = []
    for _ in range(steps):
        h = X @ w1.T
        z = h @ w2.T
        dy = 2 * (s * z - T) / T.size  # d mean((y - t)^2) / dy
        g2, gs = s * dy.T @ h, float((dy * z).sum())
        g1 = (s * dy @ w2).T @ X
        norms = [np.linalg.norm(g1), np.linalg.norm(g2), abs(gs)]
        out.append(
            {
                "grad_norm/layer_0/weight": norms[0],
                "grad_norm/layer_1/weight": norms[1],
                "grad_norm/scale": norms[2],
                "grad_norm/total": float(np.linalg.norm(norms)),
            }
        )
        w1, w2, s = w1 - LR * g1, w2 - LR * g2, s - LR * gs
    return out


def test_layer_key_groups_by_the_first_integer_in_the_name():
    assert layer_key("net.encoder.blocks.3.linear2.weight") == "grad_norm/layer_3/linear2.weight"
    assert layer_key("net.encoder.embed.weight") == "grad_norm/net.encoder.embed.weight"


def test_logs_hand_computed_norms_at_the_due_steps(tmp_path: Path):
    data = DataLoader(TensorDataset(torch.from_numpy(X), torch.from_numpy(T)), batch_size=4)
    logger = CSVLogger(str(tmp_path), name="csv", version=0)
    callback = GradNormLogger(every_n_steps=2, first_n_steps=1)
    trainer = L.Trainer(
        max_steps=STEPS,
        logger=logger,
        callbacks=[callback],
        default_root_dir=str(tmp_path),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(TwoLinear(), data)

    expected = hand_norms(STEPS)
    rows = read_history(tmp_path, GRAD_NORM_FILE)
    assert [r["step"] for r in rows] == [0, 2, 4]
    with (tmp_path / "csv" / "version_0" / "metrics.csv").open() as f:
        logged = [r for r in csv.DictReader(f) if r["grad_norm/total"]]
    assert [int(r["step"]) for r in logged] == [0, 2, 4]
    for row, csv_row in zip(rows, logged, strict=True):
        want = expected[row["step"]]
        assert {k for k in row if k.startswith("grad_norm/")} == want.keys()
        for key, value in want.items():
            assert row[key] == pytest.approx(value, rel=1e-9), key
            assert float(csv_row[key]) == pytest.approx(value, rel=1e-9), key


def test_params_filter_keeps_only_matching_parameters(tmp_path: Path):
    data = DataLoader(TensorDataset(torch.from_numpy(X), torch.from_numpy(T)), batch_size=4)
    callback = GradNormLogger(every_n_steps=1, params=["layers.1.*"])
    trainer = L.Trainer(
        max_steps=1,
        logger=False,
        callbacks=[callback],
        default_root_dir=str(tmp_path),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(TwoLinear(), data)
    (row,) = read_history(tmp_path, GRAD_NORM_FILE)
    # The total stays the norm over every gradient, the one clipping sees.
    assert set(row) == {"step", "epoch", "grad_norm/layer_1/weight", "grad_norm/total"}
    assert row["grad_norm/total"] == pytest.approx(hand_norms(1)[0]["grad_norm/total"])


@pytest.mark.slow
def test_callbacks_grad_norm_config_logs_every_layer_of_a_cli_run(tmp_path: Path):
    done = run_cli(
        "research-train",
        *FAST,
        "callbacks=grad_norm",
        "callbacks.grad_norm.every_n_steps=3",
        "callbacks.grad_norm.first_n_steps=2",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(tmp_path)
    rows = read_history(run, GRAD_NORM_FILE)
    steps = [r["step"] for r in rows]
    assert steps[:4] == [0, 1, 3, 6] and all(s == 0 or s % 3 == 0 for s in steps[2:])
    wandb_written()
    wandb_rows = [r for r in read_offline_run(run).history if "grad_norm/total" in r]
    assert [r["trainer/global_step"] for r in wandb_rows] == steps
    # conf/model/cnn.yaml: conv blocks in a Sequential, so each has a layer index.
    assert "grad_norm/layer_0/weight" in rows[0] and rows[0]["grad_norm/total"] > 0


def test_a_bad_grad_norm_setting_is_one_line(tmp_path: Path):
    done = run_cli(
        "research-train", "callbacks=grad_norm", "callbacks.grad_norm.every_n_steps=0", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "callbacks.grad_norm.every_n_steps=0 is out of range" in done.stderr
