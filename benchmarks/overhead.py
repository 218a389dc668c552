"""Framework overhead: `research-train` vs bare Lightning vs a plain PyTorch loop, on the same CNN,
data and batches.

All three train the CNN on digits with Adam and validate after every epoch; steps/s is taken over
epochs 2..N (the first epoch pays one-off costs in all). `research-train` runs with its default
W&B offline logging, checkpoints, history and metrics; bare Lightning is a minimal
LightningModule with no logger, checkpoint or progress bar. All contenders run interleaved
(plain, Lightning, ..., research-train) in every round, so a change in the machine's load hits
all of them. Each contender runs in a Python process of its own, as research-train's command
does, so that none trains in a process where another has already trained (its allocations, its
thread pool).
Prints steps/s of each and the ratios to the plain loop, median (min-max) over the rounds
(target: research-train's ratio at least bare Lightning's, and >= 0.95 where a step takes
>= 20 ms), and research-train's steps/s over bare Lightning's of the same round.

The plain loop runs without `PYTORCH_NVML_BASED_CUDA_CHECK`, which importing Lightning sets in
this process: a PyTorch script has none, and with a CUDA build of torch on a machine without
GPUs it costs every optimizer step (`benchmarks/cuda_probe_cost.py`). Bare Lightning keeps it,
as its users do; research-train drops it where there is no GPU (`research.run.cuda_probe`).

    python benchmarks/overhead.py [--settings 32 256 256-wide] [--repeats 5] [--equipped]

`--equipped` adds Lightning given research-train's default outputs its own way (W&B offline,
train loss and accuracy, validation loss and accuracy, the learning rate, best and last
checkpoints every epoch), so the framework's cost is also measured against the same work done
by a Lightning user rather than against no work.

`--baseline SRC` adds another contender: `research-train` of another checkout (its `src/` put
first on PYTHONPATH, e.g. a worktree of an earlier commit), in the same rounds, and prints this
checkout's steps/s over the baseline's, so a change is measured against what it replaced:

    git worktree add ../before <commit>
    python benchmarks/overhead.py --settings 32 256 --baseline ../before/src
    git worktree remove ../before

Small batches make a step cost a few milliseconds on a CPU, so Lightning's fixed per-step work
(hooks, closures, logging bookkeeping) shows; `256-wide` (twice the channels and hidden units,
about 4x the work of a step) costs >= 20 ms a step but still has only 6 steps an epoch, so the
per-epoch work (validation, checkpoints, history, W&B) weighs on it; `64-wider` (4x the channels
and hidden units of the default, batch 64) also costs >= 20 ms a step, over 23 steps an epoch:
the steady state of a real model. The plain loop's ms/step is printed for each setting.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
from baseline_checkout import add_baseline_argument, put_first_on_path  # beside this file
from torch import nn

from research.data.digits import DigitsDataModule
from research.models.cnn import CNN
from research.run.cuda_probe import NVML_CHECK

TIMED_STEPS = 300
CNN_ARGS = {"channels": [32, 64], "kernel_sizes": [3, 3], "hidden_sizes": [128], "dropout": 0.2}
WIDE_ARGS = {**CNN_ARGS, "channels": [64, 128], "hidden_sizes": [256]}
WIDER_ARGS = {**CNN_ARGS, "channels": [128, 256], "hidden_sizes": [512]}
# name -> (batch size, CNN arguments)
SETTINGS: dict[str, tuple[int, dict[str, Any]]] = {
    "32": (32, CNN_ARGS),
    "256": (256, CNN_ARGS),
    "256-wide": (256, WIDE_ARGS),
    "64-wider": (64, WIDER_ARGS),
}


def steps_per_epoch(batch_size: int) -> int:
    """Training steps in an epoch of the digits at `batch_size`, as every contender loads them."""
    data = DigitsDataModule(batch_size=batch_size, seed=0)
    data.setup()
    return len(data.train_dataloader())


def steps_per_s(marks: list[tuple[float, int]]) -> float:
    """Steps/s between the first and the last epoch-end mark (time, global step)."""
    (t0, s0), (t1, s1) = marks[0], marks[-1]
    return (s1 - s0) / (t1 - t0)


def plain_loop_marks(epochs: int, batch_size: int, cnn: dict[str, Any]) -> list[tuple[float, int]]:
    """(time, global step) at each epoch's end of a hand-written loop, without the variable that
    importing Lightning (this module does) sets: a PyTorch script has none."""
    nvml_check = os.environ.pop(NVML_CHECK, None)
    try:
        return _plain_loop(epochs, batch_size, cnn)
    finally:
        if nvml_check is not None:
            os.environ[NVML_CHECK] = nvml_check


def _plain_loop(epochs: int, batch_size: int, cnn: dict[str, Any]) -> list[tuple[float, int]]:
    torch.manual_seed(0)
    data = DigitsDataModule(batch_size=batch_size, seed=0)
    data.setup()
    model = CNN(**cnn)
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
    return marks


class _Bare(L.LightningModule):
    """The least a Lightning user writes: the CNN, cross-entropy, Adam, validation accuracy."""

    def __init__(self, cnn: dict[str, Any]) -> None:
        super().__init__()
        self.net = CNN(**cnn)
        self.loss_fn = nn.CrossEntropyLoss()
        self.marks: list[tuple[float, int]] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return self.loss_fn(self.net(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val/acc", (self.net(x).argmax(1) == y).float().mean())

    def on_train_epoch_end(self) -> None:  # after the epoch's validation, as in the others
        self.marks.append((time.perf_counter(), self.trainer.global_step))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def bare_lightning_marks(
    epochs: int, batch_size: int, cnn: dict[str, Any], **trainer_args: Any
) -> list[tuple[float, int]]:
    """(time, global step) at each epoch's end of a minimal LightningModule under a plain
    Trainer, given `trainer_args` besides its own."""
    torch.manual_seed(0)
    module = _Bare(cnn)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)  # no banners between rows
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **trainer_args,
    )
    trainer.fit(module, datamodule=DigitsDataModule(batch_size=batch_size, seed=0))
    return module.marks


class _Logged(_Bare):
    """The bare module logging what research-train logs: the train loss every step (written
    every `log_every_n_steps`), train accuracy per epoch, validation loss and accuracy."""

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        logits = self.net(x)
        loss = self.loss_fn(logits, y)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/acc", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        logits = self.net(x)
        self.log("val/loss", self.loss_fn(logits, y))
        self.log("val/acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)


def equipped_lightning_marks(
    epochs: int, batch_size: int, cnn: dict[str, Any]
) -> list[tuple[float, int]]:
    """(time, global step) at each epoch's end of Lightning given research-train's default
    outputs the way a Lightning user adds them: W&B offline, the learning rate every logged step,
    the best and the last checkpoint every epoch (Lightning's own synchronous writes, no fsync)."""
    import wandb
    from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
    from lightning.pytorch.loggers import WandbLogger

    torch.manual_seed(0)
    module = _Logged(cnn)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    wandb.setup(settings=wandb.Settings(mode="offline"))  # no telemetry exporters (docs)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = ModelCheckpoint(
            dirpath=Path(tmp, "checkpoints"),
            monitor="val/acc",
            mode="max",
            save_last=True,
            filename="best",
        )
        trainer = L.Trainer(
            accelerator="cpu",
            devices=1,
            max_epochs=epochs,
            logger=WandbLogger(save_dir=tmp, mode="offline", settings={"silent": True}),
            log_every_n_steps=10,
            callbacks=[checkpoint, LearningRateMonitor(logging_interval="step")],
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(module, datamodule=DigitsDataModule(batch_size=batch_size, seed=0))
        wandb.finish()
    return module.marks


def framework(epochs: int, batch_size: int, cnn: dict[str, Any], src: str | None = None) -> float:
    """Steps/s of `research-train` (of the checkout whose `src/` is `src`, if given) over epochs
    2..N, from its own history.jsonl timestamps."""
    return steps_per_s(framework_marks(epochs, batch_size, cnn, src))


def framework_marks(
    epochs: int,
    batch_size: int,
    cnn: dict[str, Any],
    src: str | None = None,
    overrides: tuple[str, ...] = (),
) -> list[tuple[float, int]]:
    """(time, global step) of each history.jsonl row of a `research-train` run (of the checkout
    whose `src/` is `src`, if given), given `overrides` besides its own."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "WANDB_SILENT": "true", "RESEARCH_ROOT": tmp}
        put_first_on_path(env, src)
        cmd = [
            str(Path(sys.executable).parent / "research-train"),
            f"trainer.max_epochs={epochs}",
            f"data.batch_size={batch_size}",
            *(f"model.net.{k}={json.dumps(v).replace(' ', '')}" for k, v in cnn.items()),
            "trainer.enable_progress_bar=false",
            "test=false",
            *overrides,
        ]
        subprocess.run(cmd, cwd=tmp, env=env, check=True, capture_output=True)
        (history,) = Path(tmp).glob("logs/train/runs/*/history.jsonl")
        rows = [json.loads(line) for line in history.read_text().splitlines()]
    return [(row["time_s"], row["step"]) for row in rows]


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


# contender -> its epoch-end marks, trained in the calling process
IN_PROCESS: dict[str, Callable[..., list[tuple[float, int]]]] = {
    "plain loop": plain_loop_marks,
    "bare Lightning": bare_lightning_marks,
    "equipped Lightning": equipped_lightning_marks,
}


def in_fresh_process(
    who: str, epochs: int, batch_size: int, cnn: dict[str, Any], **trainer_args: Any
) -> list[tuple[float, int]]:
    """Epoch-end marks of the contender `who` of `IN_PROCESS` (given `trainer_args`, for those
    built on a Trainer), trained in a Python process of its own."""
    call = json.dumps([epochs, batch_size, cnn, trainer_args])
    cmd = [sys.executable, __file__, "--contender", who, call]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return [tuple(mark) for mark in json.loads(done.stdout.splitlines()[-1])]


def fresh_rate(who: str, epochs: int, batch_size: int, cnn: dict[str, Any]) -> float:
    """Steps/s over epochs 2..N of the contender `who`, trained in a Python process of its own."""
    return steps_per_s(in_fresh_process(who, epochs, batch_size, cnn))


def run_contender(parser: argparse.ArgumentParser, who: str, call: str) -> None:
    """The child's side of `in_fresh_process`: train `who` and print its marks as JSON."""
    if who not in IN_PROCESS:
        parser.error(f"--contender: no contender {who!r}; valid: {', '.join(IN_PROCESS)}")
    try:
        epochs, batch_size, cnn, trainer_args = json.loads(call)
    except ValueError:
        parser.error(
            f"--contender: CALL must be JSON [epochs, batch size, CNN, trainer args], not {call!r}"
        )
    print(json.dumps(IN_PROCESS[who](epochs, batch_size, cnn, **trainer_args)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timed-steps", type=int, default=TIMED_STEPS)
    parser.add_argument(
        "--equipped",
        action="store_true",
        help="add Lightning with research-train's outputs (W&B, lr, checkpoints) its own way",
    )
    add_baseline_argument(parser)
    # internal: one run of in_fresh_process, so not in --help
    parser.add_argument("--contender", nargs=2, metavar=("NAME", "CALL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        run_contender(parser, *args.contender)
        return
    scripted = ["plain loop", "bare Lightning"] + ["equipped Lightning"] * args.equipped
    contenders = {who: functools.partial(fresh_rate, who) for who in scripted}
    contenders["research-train"] = framework
    if args.baseline:
        contenders["baseline"] = functools.partial(framework, src=args.baseline)
    print(
        f"torch threads: {torch.get_num_threads()}; {args.repeats} interleaved rounds "
        f"({', '.join(contenders)}) per setting; steps/s and ratio to the plain loop as "
        "median (min-max)"
    )
    for name in args.settings:
        batch_size, cnn = SETTINGS[name]
        epochs = 1 + math.ceil(args.timed_steps / steps_per_epoch(batch_size))
        rounds = [
            {who: run(epochs, batch_size, cnn) for who, run in contenders.items()}
            for _ in range(args.repeats)
        ]
        plain = [r["plain loop"] for r in rounds]
        print(
            f"{name} (batch {batch_size}, {epochs} epochs): plain loop "
            f"{spread(plain, '.1f')} steps/s = {1000 / statistics.median(plain):.1f} ms/step"
        )
        for who in list(contenders)[1:]:
            rates = [r[who] for r in rounds]
            ratios = [r[who] / r["plain loop"] for r in rounds]
            print(f"  {who:18s} {spread(rates, '.1f')} steps/s, ratio {spread(ratios, '.3f')}")
        # The target's comparison, paired by round: above 1 where research-train is faster.
        ratios = [r["research-train"] / r["bare Lightning"] for r in rounds]
        print(f"  research-train / bare Lightning: {spread(ratios, '.3f')}")
        if args.baseline:
            ratios = [r["research-train"] / r["baseline"] for r in rounds]
            print(f"  research-train / baseline: {spread(ratios, '.3f')}")


if __name__ == "__main__":
    main()
