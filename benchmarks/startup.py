"""What W&B adds to a 1-step `research-train` run: logger=wandb (offline) against logger=none.

Each run is a fresh process (imports, config, data, model, one step, W&B start and finish), in
interleaved rounds so that load drifts hit every arm alike. Prints the median whole-command wall
time and the median job time (metrics.json's wall_time_s) of each arm, and what W&B adds.
`--baseline SRC` also runs another checkout's package (e.g. a worktree of another commit, its
`src/` put first on PYTHONPATH) in the same rounds, to compare two versions of the start-up, and
prints this checkout's command wall over the baseline's, paired by round, median (min-max):

    git worktree add ../other <commit>
    python benchmarks/startup.py --pairs 5 --baseline ../other/src
    git worktree remove ../other
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

from baseline_checkout import add_baseline_argument, put_first_on_path  # beside this file
from overhead import spread  # beside this file

COMMAND = [
    str(Path(sys.executable).parent / "research-train"),
    "trainer.max_steps=1",
    "test=false",
    "trainer.enable_progress_bar=false",
    "trainer.enable_model_summary=false",
]
LOGGERS = ("wandb", "none")


def run(logger: str, src: str | None) -> tuple[float, float]:
    """(whole-command wall, job wall) of one 1-step run in a fresh process and folder."""
    with tempfile.TemporaryDirectory() as cwd:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "RESEARCH_"))}
        env.update(WANDB_SILENT="true", RESEARCH_ROOT=cwd)
        put_first_on_path(env, src)
        start = time.perf_counter()
        subprocess.run(
            [*COMMAND, f"logger={logger}"], cwd=cwd, env=env, capture_output=True, check=True
        )
        wall = time.perf_counter() - start
        (metrics,) = Path(cwd).glob("logs/train/runs/*/metrics.json")
        return wall, json.loads(metrics.read_text())["wall_time_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="rounds of one run per arm")
    add_baseline_argument(parser)
    args = parser.parse_args()
    sources = {"this": None, **({"baseline": args.baseline} if args.baseline else {})}
    arms = [(name, logger) for name in sources for logger in LOGGERS]
    times: dict[tuple[str, str], list[tuple[float, float]]] = {arm: [] for arm in arms}
    for round_ in range(args.pairs):
        shift = round_ % len(arms)  # rotate the order: no arm always runs first
        for name, logger in arms[shift:] + arms[:shift]:
            times[name, logger].append(run(logger, sources[name]))
    print(f"1-step research-train, {args.pairs} runs per arm, medians (command wall / job wall):")
    for name in sources:
        medians = {
            logger: [statistics.median(t[i] for t in times[name, logger]) for i in (0, 1)]
            for logger in LOGGERS
        }
        for logger in LOGGERS:
            wall, job = medians[logger]
            print(f"  {name:8s} logger={logger:5s}  {wall:6.2f} s / {job:5.2f} s")
        wall, job = (medians["wandb"][i] - medians["none"][i] for i in (0, 1))
        print(f"  {name:8s} W&B adds       {wall:+6.2f} s / {job:+5.2f} s")
    if args.baseline:
        for logger in LOGGERS:  # paired by round: below 1 where this checkout starts faster
            ratios = [
                this[0] / base[0]
                for this, base in zip(times["this", logger], times["baseline", logger], strict=True)
            ]
            print(f"  this / baseline, command wall, logger={logger}: {spread(ratios, '.3f')}")


if __name__ == "__main__":
    main()
