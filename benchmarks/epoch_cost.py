"""Per-epoch cost: epochs of one training step, so that an epoch's own work (validation, metrics,
checkpoints, history, W&B) is most of what is timed.

`research-train` with its defaults and bare Lightning (`overhead.py`'s minimal module: no logger,
checkpoint or progress bar) train a CNN (`--cnn`: the default one, or `overhead.py`'s `wide` or
`wider`, whose checkpoints are about 4 and 15 times larger) for one batch of `--batch-size` an epoch
(`limit_train_batches=1`) and validate after it. Milliseconds an epoch over epochs 2..N,
interleaved round by round; each contender trains in a fresh Python process each time, as in
`overhead.py`. Prints each contender's ms/epoch,
median (min-max), and research-train's epoch time over bare Lightning's of the same round.

`--baseline SRC` adds `research-train` of another checkout (see `overhead.py`) in the same
rounds and prints the baseline's epoch time over this checkout's: above 1 where this checkout's
epochs are shorter.

`--parts` adds `research-train` without each part of its default per-epoch work (`PARTS`) in
the same rounds, and prints what each part costs: research-train's epoch time minus the
variant's, paired by round. Without W&B there is no learning-rate monitor either (it needs a
logger); without the checkpoint callback there are no checkpoints at all.

    python benchmarks/epoch_cost.py [--rounds 10] [--epochs 80] [--cnn wide] [--parts]
    python benchmarks/epoch_cost.py --baseline ../before/src
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

from baseline_checkout import add_baseline_argument  # beside this file
from overhead import CNN_ARGS, WIDE_ARGS, WIDER_ARGS, framework_marks, in_fresh_process, spread

# part of research-train's default per-epoch work -> the overrides that leave it out
PARTS: dict[str, tuple[str, ...]] = {
    "W&B": ("logger=none",),
    "checkpoints": ("~callbacks.model_checkpoint",),
    "LR monitor, progress log": ("callbacks=none",),  # keeps the checkpoint callback
}
CNNS = {"default": CNN_ARGS, "wide": WIDE_ARGS, "wider": WIDER_ARGS}


def ms_per_epoch(marks: list[tuple[float, int]]) -> float:
    """Mean epoch time between the first and the last epoch-end mark (time, global step)."""
    (t0, _), (t1, _) = marks[0], marks[-1]
    return (t1 - t0) / (len(marks) - 1) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=80)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--cnn", choices=list(CNNS), default="default")
    parser.add_argument("--parts", action="store_true", help="also without each of PARTS")
    add_baseline_argument(parser)
    args = parser.parse_args()
    one_step = ("trainer.limit_train_batches=1",)
    cnn = CNNS[args.cnn]
    contenders: dict[str, Callable[[], list[tuple[float, int]]]] = {
        "bare Lightning": functools.partial(
            in_fresh_process,
            "bare Lightning",
            args.epochs,
            args.batch_size,
            cnn,
            limit_train_batches=1,
        ),
        "research-train": functools.partial(
            framework_marks, args.epochs, args.batch_size, cnn, overrides=one_step
        ),
    }
    if args.baseline:
        contenders["baseline"] = functools.partial(
            framework_marks, args.epochs, args.batch_size, cnn, args.baseline, one_step
        )
    for part, overrides in PARTS.items() if args.parts else ():
        contenders[f"without {part}"] = functools.partial(
            framework_marks, args.epochs, args.batch_size, cnn, overrides=one_step + overrides
        )
    print(
        f"{args.rounds} interleaved rounds ({', '.join(contenders)}) of {args.epochs} one-step "
        f"epochs of the {args.cnn} CNN at batch {args.batch_size}; ms/epoch as median (min-max)"
    )
    rounds = [
        {who: ms_per_epoch(marks()) for who, marks in contenders.items()}
        for _ in range(args.rounds)
    ]
    for who in contenders:
        print(f"  {who:34s} {spread([r[who] for r in rounds], '.1f')} ms/epoch")
    ratios = [r["research-train"] / r["bare Lightning"] for r in rounds]
    print(f"  research-train / bare Lightning: {spread(ratios, '.3f')}")
    if args.baseline:
        ratios = [r["baseline"] / r["research-train"] for r in rounds]
        print(f"  baseline / research-train: {spread(ratios, '.3f')}")
    for part in PARTS if args.parts else ():
        costs = [r["research-train"] - r[f"without {part}"] for r in rounds]
        print(f"  cost of {part}: {spread(costs, '+.1f')} ms/epoch")


if __name__ == "__main__":
    main()
