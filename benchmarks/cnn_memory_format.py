"""What the CNN's memory format (`model.net.memory_format`) buys: a training step (forward,
cross-entropy, backward, Adam) and a validation forward of `research.models.cnn.CNN` laid out
channels_last (NHWC, the default) against contiguous (NCHW, torch's default), on random images of
each setting's shape.

The two models start from the same weights. Each round times both, the order alternating from
round to round (A B, then B A), so that a load that comes and goes falls on both. Prints ms a
step of each, median (min-max), and the median ratio contiguous / channels_last with min-max
(above 1: channels_last is faster).

    python benchmarks/cnn_memory_format.py [--settings 32 256 256-wide 64-wider cifar-128]
        [--rounds 7] [--steps 30]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch
from overhead import SETTINGS, spread  # beside this file
from torch import nn
from torch.nn import functional as F

from research.models.cnn import CNN

# The overhead benchmark's digits settings (8x8 greyscale), and the default CNN on CIFAR-10's
# shape (32x32 RGB) at batch 128.
SHAPES: dict[str, tuple[int, int, int, dict[str, Any]]] = {
    name: (batch, 1, 8, cnn) for name, (batch, cnn) in SETTINGS.items()
}
SHAPES["cifar-128"] = (128, 3, 32, SETTINGS["32"][1])
FORMATS = ("contiguous", "channels_last")


def train_step(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> Callable[[], None]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> None:
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def eval_step(model: nn.Module, images: torch.Tensor) -> Callable[[], None]:
    def step() -> None:
        with torch.no_grad():
            model(images)

    return step


def ms_per_step(step: Callable[[], None], steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps * 1e3


def compare(steps: dict[str, Callable[[], None]], rounds: int, count: int) -> str:
    """One markdown cell group: each format's ms a step and the paired ratio."""
    for step in steps.values():
        ms_per_step(step, 3)  # warm-up: oneDNN primitives, the allocator
    times: dict[str, list[float]] = {name: [] for name in FORMATS}
    for r in range(rounds):
        for name in FORMATS if r % 2 == 0 else reversed(FORMATS):
            times[name].append(ms_per_step(steps[name], count))
    ratios = [a / b for a, b in zip(times["contiguous"], times["channels_last"], strict=True)]
    return " | ".join(
        [spread(times["contiguous"], ".2f"), spread(times["channels_last"], ".2f")]
        + [spread(ratios, ".3f")]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (>= 5)")
    parser.add_argument("--steps", type=int, default=30, help="steps timed per round and format")
    args = parser.parse_args()
    print(
        f"{args.rounds} rounds of {args.steps} steps, torch threads: {torch.get_num_threads()}\n"
        "| setting | step | contiguous ms | channels_last ms | contiguous / channels_last |\n"
        "|---|---|---:|---:|---:|"
    )
    for name in args.settings:
        batch, channels, size, cnn = SHAPES[name]
        torch.manual_seed(0)
        images = torch.randn(batch, channels, size, size)
        labels = torch.randint(0, 10, (batch,))
        models = {
            fmt: CNN(in_channels=channels, image_size=size, memory_format=fmt, **cnn)
            for fmt in FORMATS
        }
        models["contiguous"].load_state_dict(models["channels_last"].state_dict())
        train = {fmt: train_step(m.train(), images, labels) for fmt, m in models.items()}
        print(f"| `{name}` | train | {compare(train, args.rounds, args.steps)} |")
        evals = {fmt: eval_step(m.eval(), images) for fmt, m in models.items()}
        print(f"| `{name}` | eval | {compare(evals, args.rounds, args.steps)} |")


if __name__ == "__main__":
    main()
