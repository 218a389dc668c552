"""What `callbacks=throughput` costs a run: `research-train` with and without it, interleaved.

The throughput callback (`research.callbacks.throughput.ThroughputLog`) does three kinds of work:
once, it counts the first training batch's FLOPs under torch's `FlopCounterMode`; every step it
adds the batch's samples (and tokens) to running totals; every `trainer.log_every_n_steps` steps
and at each epoch's end it turns the totals into rates and logs them. This benchmark trains the
CNN on digits both ways, at `overhead.py`'s settings, each run in a fresh process (as
`overhead.py` runs research-train), in pairs whose order alternates (without, with; then with,
without), and prints per setting:

- steps/s over epochs 2..N of each, and the paired ratio with / without (the per-step and
  per-epoch cost: below 1 where the callback slows training);
- the first epoch's time of each, from the fit's start, and the paired difference with - without
  (the one-off FLOP count of the first batch, plus whatever else differs in that epoch).

`32` (46 short steps an epoch) shows a per-step cost, `256` (6 steps an epoch) a per-epoch
one, and `64-wider` (steps of >= 20 ms) what is left of either on a larger model.

    python benchmarks/throughput_cost.py [--settings 32 256 64-wider] [--pairs 7] [--epochs 10]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

from overhead import SETTINGS, framework_marks, spread, steps_per_s  # beside this file

CONTENDERS = {"without": (), "with": ("callbacks=throughput",)}


def measure(setting: str, pairs: int, epochs: int) -> None:
    batch_size, cnn = SETTINGS[setting]
    runs: dict[str, Callable[[], list[tuple[float, int]]]] = {
        who: functools.partial(framework_marks, epochs, batch_size, cnn, overrides=overrides)
        for who, overrides in CONTENDERS.items()
    }
    rates: dict[str, list[float]] = {who: [] for who in runs}
    first: dict[str, list[float]] = {who: [] for who in runs}
    for pair in range(pairs):
        order = list(runs) if pair % 2 == 0 else list(reversed(runs))
        for who in order:
            marks = runs[who]()
            rates[who].append(steps_per_s(marks))
            first[who].append(marks[0][0])
    print(f"\n{setting}: batch {batch_size}, CNN {cnn}, {pairs} pairs of {epochs} epochs")
    for who in runs:
        print(
            f"  {who:8s} {spread(rates[who], '.1f')} steps/s, "
            f"first epoch {spread(first[who], '.3f')} s"
        )
    ratios = [a / b for a, b in zip(rates["with"], rates["without"], strict=True)]
    extra = [a - b for a, b in zip(first["with"], first["without"], strict=True)]
    print(f"  steps/s with / without: {spread(ratios, '.3f')}")
    print(f"  first epoch with - without: {spread(extra, '+.3f')} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--settings", nargs="+", choices=list(SETTINGS), default=["32", "256", "64-wider"]
    )
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    for setting in args.settings:
        measure(setting, args.pairs, args.epochs)


if __name__ == "__main__":
    main()
