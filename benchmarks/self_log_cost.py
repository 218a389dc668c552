"""What a `self.log` of a scalar costs with Lightning's move of its accumulator to the value's
device at every call, and with `research.compat.lightning_log_skips_same_device_moves`, which
skips that move when nothing would change device.

Times Lightning's `_ResultCollection.log` (what `LightningModule.log` ends in) of six epoch-level
scalars, as a default run logs at an epoch's end, on the CPU, in interleaved pairs (Lightning's
`to`, then the patched one). Prints microseconds a call of each, median (min-max), and the
median ratio Lightning / patched with min-max.

    python benchmarks/self_log_cost.py [--pairs 7] [--calls 300]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch
from lightning.pytorch.trainer.connectors.logger_connector.result import (
    _ResultCollection,
    _ResultMetric,
)
from overhead import spread  # beside this file

from research import compat

NAMES = ["train/acc", "train/loss_epoch", "val/loss", "val/acc", "val/acc_top3", "val/acc_best"]


def _per_call_us(results: _ResultCollection, to: Callable[..., Any], calls: int) -> float:
    _ResultMetric.to = to
    value = torch.tensor(0.5)
    start = time.perf_counter()
    for _ in range(calls):
        for name in NAMES:
            results.log("on_validation_epoch_end", name, value, batch_size=1)
    return (time.perf_counter() - start) / (calls * len(NAMES)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    lightning_to = _ResultMetric.to
    compat.lightning_log_skips_same_device_moves()
    patched_to = _ResultMetric.to
    results = _ResultCollection(training=False)
    results.batch = None
    print(f"{args.pairs} interleaved pairs of {args.calls} x {len(NAMES)} calls; us a call")
    with_move, skipped = [], []
    for _ in range(args.pairs):
        with_move.append(_per_call_us(results, lightning_to, args.calls))
        skipped.append(_per_call_us(results, patched_to, args.calls))
    ratios = [a / b for a, b in zip(with_move, skipped, strict=True)]
    print(
        f"self.log: Lightning {spread(with_move, '.1f')}, same-device move skipped "
        f"{spread(skipped, '.1f')}; ratio {spread(ratios, '.2f')}"
    )


if __name__ == "__main__":
    main()
