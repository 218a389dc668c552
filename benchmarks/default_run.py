"""The default `research-train` (CNN on digits, no overrides but the seed): accuracy and time.

Target: >= 98% test accuracy in under 2 minutes on a 2-core CPU. Times are whole-command wall
times (process start, imports, data, training, testing the best checkpoint, W&B offline).

    python benchmarks/default_run.py [--seeds 0 1 2 3 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(seed: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as cwd:
        start = time.perf_counter()
        subprocess.run(
            [str(Path(sys.executable).parent / "research-train"), f"seed={seed}"],
            cwd=cwd,
            env={**os.environ, "WANDB_SILENT": "true", "RESEARCH_ROOT": cwd},
            capture_output=True,
            check=True,
        )
        wall = time.perf_counter() - start
        (metrics,) = Path(cwd).glob("logs/train/runs/*/metrics.json")
        return json.loads(metrics.read_text())["best"]["test/acc"], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    results = [run(seed) for seed in args.seeds]
    for seed, (acc, wall) in zip(args.seeds, results, strict=True):
        print(f"seed={seed}: test/acc {acc:.4f}  wall {wall:.1f} s")
    accs = [a for a, _ in results]
    walls = [w for _, w in results]
    print(
        f"test/acc mean {statistics.mean(accs):.4f} min {min(accs):.4f}; "
        f"wall mean {statistics.mean(walls):.1f} s max {max(walls):.1f} s"
    )


if __name__ == "__main__":
    main()
