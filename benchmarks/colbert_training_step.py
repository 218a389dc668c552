"""Training-step time of the stdlib ColBERT recipe: what length-sorted chunks and dropout 0 save.

A step is what `RetrievalModule.training_step` runs plus backward and an AdamW step, on real
batches of `data=stdlib_codesearch` (16 queries x (positive + 1 BM25 hard negative); queries
padded to 32 tokens, documents cut at 128), for three setups over the same batches:
- padded: a batch's documents embedded at once, padded to the longest; MiniLM's own dropout
  (0.1). The recipe before issue 16's budget study.
- buckets: documents embedded 8 at a time, longest first (`model.train_length_bucket=8`),
  dropout 0.1.
- recipe: buckets and `model.net.dropout=0` (experiment=colbert_stdlib).
The setups run in turn, `--batches` steps each per round, for `--repeats` rounds (A B C A B C),
so that load on this shared machine falls on all; each setup's speed-up over `padded` is the
median of the per-round ratios with their min-max. Prints a markdown table.

    python benchmarks/colbert_training_step.py [--repeats 6] [--batches 4]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path

import torch
from colbert import in_turn, ratios  # beside this file

from research.data.codesearch import StdlibCodeSearchDataModule
from research.losses.contrastive import Contrastive
from research.models.colbert import ColBERT
from research.tasks.retrieval import RetrievalModule

SETUPS = {"padded": (None, 0.1), "buckets": (8, 0.1), "recipe": (8, 0.0)}


def training_batches(data_dir: Path, count: int) -> list[dict]:
    data = StdlibCodeSearchDataModule(data_dir=str(data_dir), batch_size=16, n_negatives=1, seed=0)
    data.prepare_data()
    data.setup("fit")
    batches = iter(data.train_dataloader())
    return [next(batches) for _ in range(count)]


def stepper(bucket: int | None, dropout: float, batches: list[dict]) -> Callable[[], None]:
    """A function that trains one step on each batch, with its own model and optimizer."""
    torch.manual_seed(0)
    net = ColBERT(max_length_query=32, max_length_document=128, dropout=dropout)
    module = RetrievalModule(
        net, Contrastive(temperature=1.0), optimizer=None, train_length_bucket=bucket
    ).train()
    optimizer = torch.optim.AdamW(module.parameters(), lr=5e-5, weight_decay=0.01)

    def run() -> None:
        for batch in batches:
            queries, query_mask = module._embed(batch["queries"], is_query=True)
            documents, document_mask = module._embed(batch["documents"], is_query=False)
            module.loss(queries, query_mask, documents, document_mask).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--repeats", type=int, default=6, help="rounds (pairs per ratio)")
    parser.add_argument("--batches", type=int, default=4, help="training steps per setup and round")
    args = parser.parse_args()
    batches = training_batches(args.data_dir, args.batches)
    runs = {name: stepper(*setup, batches) for name, setup in SETUPS.items()}
    for run in runs.values():
        run()  # warm-up
    seconds = in_turn(runs, args.repeats)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.batches} steps")
    print("| setup | s / step, median | speed-up over padded, median (min-max, rounds) |")
    print("|---|---:|---|")
    for name, times in seconds.items():
        per_step = statistics.median(times) / args.batches
        speedup = [slow / fast for slow, fast in zip(seconds["padded"], times, strict=True)]
        print(f"| {name} | {per_step:.2f} | {ratios(speedup)} |")


if __name__ == "__main__":
    main()
