"""What W&B logging costs a training step on a CPU that torch keeps busy: Lightning's WandbLogger,
one `wandb.log` per log call, against research's (`research.tracking.wandb_logger`), one per step.

A step is `--work` matrix products of 600x600 on torch's threads (8 ms with 3 on 2 cores, the order
of a small CNN's training step on a CPU), then what a default run logs at a logging step: the
learning-rate monitor's value, then the step's train loss, at the same step. Three contenders per
round, interleaved (no logging, Lightning's logger, research's), each writing to one offline W&B
run. Prints ms a step of each, median (min-max) over the rounds, what logging added to a step
(paired with the round's no-logging time), and the step-time ratio Lightning's / research's. Then
the same two calls with no torch work between steps: what a `wandb.log` costs on an idle CPU.

    python benchmarks/wandb_rows.py [--rounds 7] [--steps 200] [--work 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable

import torch
from lightning.pytorch.loggers import Logger
from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger
from overhead import spread  # beside this file

from research.tracking.wandb_logger import WandbLogger


def _ms_a_step(log: Callable[[int], None] | None, steps: int, work: int) -> float:
    x = torch.randn(600, 600)
    start = time.perf_counter()
    for step in range(steps):
        for _ in range(work):
            x @ x
        if log is not None:
            log(step)
    return (time.perf_counter() - start) / steps * 1000


def _logging_step(logger: Logger) -> Callable[[int], None]:
    def log(step: int) -> None:
        logger.log_metrics({"lr-Adam": 0.001}, step=step)
        logger.log_metrics({"train/loss": 0.5, "epoch": 0}, step=step)

    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--work", type=int, default=3, help="matrix products a step")
    args = parser.parse_args()
    import wandb

    os.environ.setdefault("WANDB_SILENT", "true")
    with tempfile.TemporaryDirectory() as tmp:
        run = wandb.init(project="bench", dir=tmp, mode="offline")
        loggers = {
            "Lightning's WandbLogger": LightningWandbLogger(experiment=run),
            "research's WandbLogger": WandbLogger(experiment=run),
        }
        contenders = {"no logging": None, **{k: _logging_step(v) for k, v in loggers.items()}}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        idle: dict[str, list[float]] = {name: [] for name in loggers}
        for _ in range(args.rounds):
            for name, log in contenders.items():
                times[name].append(_ms_a_step(log, args.steps, args.work))
            for name in loggers:
                idle[name].append(_ms_a_step(contenders[name], args.steps, 0))
        run.finish()
    print(
        f"torch threads: {torch.get_num_threads()}; {args.rounds} interleaved rounds of "
        f"{args.steps} steps of {args.work} products; ms a step, median (min-max)"
    )
    print("| contender | ms a step | logging adds (paired) | idle CPU: ms a step's two calls |")
    print("|---|---:|---:|---:|")
    base = times["no logging"]
    print(f"| no logging | {spread(base, '.3f')} | | |")
    for name in loggers:
        added = [t - b for t, b in zip(times[name], base, strict=True)]
        print(
            f"| {name} | {spread(times[name], '.3f')} | {spread(added, '.3f')} "
            f"| {spread(idle[name], '.3f')} |"
        )
    lightning, research = (times[name] for name in loggers)
    ratios = [a / b for a, b in zip(lightning, research, strict=True)]
    print(f"step time, Lightning's logger / research's: {spread(ratios, '.3f')}")


if __name__ == "__main__":
    main()
