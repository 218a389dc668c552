"""`model.compile=true` against eager: does the compiled network run in a real `research-train`
run, and how far do its results drift from eager's?

Two runs of the same causal LM (the context-extension experiment, dropout 0, seed 0, the same
batches) in one process, through `research.cli.train.main`: eager first, then compiled. After
each, torch's dynamo counters say how many frames it compiled and how many graph breaks it met
(eager must show none), and the runs' final metrics are compared at full precision: a compiled
run fuses kernels and so rounds differently, so its figures should differ from eager's in a late
digit, not in the first few. Set TORCH_LOGS=recompiles,graph_breaks to see each event as well.

    python benchmarks/compile_parity.py [--steps 200] [--precision bf16-mixed]
        [--trainer gpu] [override ...]

Runs write under a temporary RESEARCH_ROOT, removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from gpu_training import LM  # beside this file: the `lm` family's size

COMPARED = ["train/loss", "val/loss", "test/loss", "test/ppl"]


def train(root: Path, overrides: list[str]) -> tuple[dict[str, Any], float, dict[str, int]]:
    """One `research-train` run in this process: its final metrics, wall seconds and the dynamo
    counters it left (frames compiled, graphs, graph breaks)."""
    from torch._dynamo.utils import counters

    from research.cli.train import main

    counters.clear()
    before = set(root.rglob("metrics.json"))
    start = time.perf_counter()
    status = main(overrides)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"compile_parity.py: research-train exited {status}")
    (metrics,) = set(root.rglob("metrics.json")) - before
    dynamo = {
        "frames compiled": counters["frames"]["ok"],
        "graphs": counters["stats"]["unique_graphs"],
        "graph breaks": sum(counters["graph_break"].values()),
    }
    return json.loads(metrics.read_text())["final"], seconds, dynamo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps of each run")
    parser.add_argument("--precision", default="bf16-mixed")
    parser.add_argument("--trainer", default="gpu", help="the trainer config group's choice")
    parser.add_argument("overrides", nargs="*", help="more research-train overrides")
    args = parser.parse_args()
    common = [
        *LM,  # its trainer.max_epochs gives way to the 1 below
        f"trainer={args.trainer}",
        f"trainer.precision={args.precision}",
        f"trainer.max_steps={args.steps}",
        "trainer.max_epochs=1",
        f"trainer.limit_train_batches={args.steps}",
        "logger=csv",
        "trainer.enable_progress_bar=false",
        "seed=0",
        *args.overrides,
    ]
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["RESEARCH_ROOT"] = scratch
        root = Path(scratch)
        eager, eager_s, eager_dynamo = train(root, common)
        compiled, compiled_s, compiled_dynamo = train(root, [*common, "model.compile=true"])
    print("| | eager | compiled |\n| --- | ---: | ---: |")
    print(f"| wall s | {eager_s:.1f} | {compiled_s:.1f} |")
    for name in eager_dynamo:
        print(f"| {name} | {eager_dynamo[name]} | {compiled_dynamo[name]} |")
    print("\n| metric | eager | compiled | abs diff | rel diff |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for metric in COMPARED:
        a, b = eager.get(metric), compiled.get(metric)
        if a is None or b is None:
            continue
        print(f"| {metric} | {a!r} | {b!r} | {abs(a - b):.3g} | {abs(a - b) / abs(a):.3g} |")


if __name__ == "__main__":
    main()
