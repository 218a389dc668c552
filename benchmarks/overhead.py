"""Framework overhead: `research-train` vs a plain PyTorch loop on the same CNN, data and batches.

Both train the default CNN on digits with Adam and validate after every epoch; steps/s is taken
over epochs 2..N (the first epoch pays one-off costs in both). `research-train` runs with its
default W&B offline logging, checkpoints, history and metrics. Prints steps/s of each and the
ratio (target: >= 0.95).

    python benchmarks/overhead.py [--batch-sizes 32 256] [--repeats 5]

Small batches make a step cost a few milliseconds on a CPU, so Lightning's fixed per-step work
(hooks, closures, logging bookkeeping) shows; larger batches show the steady-state ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

from research.data.digits import DigitsDataModule
from research.models.cnn import CNN

TRAIN_SIZE = 1437  # digits' train split at the default val/test fractions
TIMED_STEPS = 300
CNN_ARGS = {"channels": [32, 64], "kernel_sizes": [3, 3], "hidden_sizes": [128], "dropout": 0.2}


def plain_loop(epochs: int, batch_size: int) -> float:
    """Steps/s of a hand-written loop over epochs 2..N."""
    torch.manual_seed(0)
    data = DigitsDataModule(batch_size=batch_size, seed=0)
    data.setup()
    model = CNN(**CNN_ARGS)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    train, val = data.train_dataloader(), data.val_dataloader()
    marks: list[tuple[float, int]] = []
    steps = 0
    for epoch in range(epochs):
        train.sampler.set_epoch(epoch)
        model.train()
        for x, y in train:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            steps += 1
        model.eval()
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val)
        assert correct >= 0
        marks.append((time.perf_counter(), steps))
    (t0, s0), (t1, s1) = marks[0], marks[-1]
    return (s1 - s0) / (t1 - t0)


def framework(epochs: int, batch_size: int) -> float:
    """Steps/s of `research-train` over epochs 2..N, from its own history.jsonl timestamps."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "WANDB_SILENT": "true", "RESEARCH_ROOT": tmp}
        cmd = [
            str(Path(sys.executable).parent / "research-train"),
            f"trainer.max_epochs={epochs}",
            f"data.batch_size={batch_size}",
            "trainer.enable_progress_bar=false",
            "test=false",
        ]
        subprocess.run(cmd, cwd=tmp, env=env, check=True, capture_output=True)
        (history,) = Path(tmp).glob("logs/train/runs/*/history.jsonl")
        rows = [json.loads(line) for line in history.read_text().splitlines()]
    first, last = rows[0], rows[-1]
    return (last["step"] - first["step"]) / (last["time_s"] - first["time_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"torch threads: {torch.get_num_threads()}; {args.repeats} interleaved pairs "
        "(plain loop, research-train) per batch size"
    )
    for batch_size in args.batch_sizes:
        steps_per_epoch = math.ceil(TRAIN_SIZE / batch_size)
        epochs = 1 + math.ceil(TIMED_STEPS / steps_per_epoch)
        pairs = [
            (plain_loop(epochs, batch_size), framework(epochs, batch_size))
            for _ in range(args.repeats)
        ]
        ratios = [ours / plain for plain, ours in pairs]
        p = statistics.median(plain for plain, _ in pairs)
        f = statistics.median(ours for _, ours in pairs)
        print(
            f"batch {batch_size:4d} ({epochs} epochs): plain loop {p:7.1f} steps/s, "
            f"research-train {f:7.1f} steps/s (medians); ratio median "
            f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
        )


if __name__ == "__main__":
    main()
