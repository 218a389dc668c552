"""What reading a batch of in-memory tensors costs: torch's default path (index every tensor once
per example, then `default_collate` stacks the examples) against
`research.data.tensor_batches` (one index per tensor for the whole batch).

Loads epochs of the digits train split through the datamodule's own sampler at each batch size,
in interleaved pairs (default, then batched). Prints microseconds a batch of each, median
(min-max), and the median ratio default / batched with min-max.

    python benchmarks/tensor_batches.py [--batch-sizes 32 256] [--pairs 7] [--epochs 5]
"""

from __future__ import annotations

import argparse
import time

from overhead import spread  # beside this file
from torch.utils.data import DataLoader, TensorDataset

from research.data.digits import DigitsDataModule


def _per_batch_us(loader: DataLoader, epochs: int) -> float:
    batches = 0
    start = time.perf_counter()
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for _ in loader:
            batches += 1
    return (time.perf_counter() - start) / batches * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.pairs} interleaved pairs of {args.epochs} epochs of digits' train split")
    for batch_size in args.batch_sizes:
        data = DigitsDataModule(batch_size=batch_size, seed=0)
        data.setup()
        batched = data.train_dataloader()
        plain = DataLoader(
            TensorDataset(*data.splits["train"].tensors),
            batch_size=batch_size,
            sampler=batched.sampler,
        )
        default, ours = [], []
        for _ in range(args.pairs):
            default.append(_per_batch_us(plain, args.epochs))
            ours.append(_per_batch_us(batched, args.epochs))
        ratios = [a / b for a, b in zip(default, ours, strict=True)]
        print(
            f"batch {batch_size}: default {spread(default, '.1f')} us, batched "
            f"{spread(ours, '.1f')} us; ratio {spread(ratios, '.2f')}"
        )


if __name__ == "__main__":
    main()
