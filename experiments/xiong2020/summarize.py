"""The trivial baselines of the xiong2020 task, and per variant how many runs diverged, failed or
stalled (ended no better than the baseline), from the run dirs `research-ablate` left.

    python experiments/xiong2020/summarize.py logs/ablations/xiong2020 [--margin 0.05]

Baselines on the test split: the majority class's accuracy, and the cross-entropy of always
predicting the training split's class frequencies (what a model that ignores its input reaches).
A run counts as stalled when its final test accuracy is below majority + margin.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from pathlib import Path

from research.config.compose import check_command_line
from research.config.resolvers import register_resolvers
from research.reports.runs import load_runs
from research.run.build import build_task


def baselines(overrides: list[str]) -> dict[str, float]:
    """Majority-class accuracy and class-prior cross-entropy on the test split."""
    (config,) = check_command_line("train", ["experiment=xiong2020", *overrides])
    datamodule, _ = build_task(config)
    datamodule.setup("fit")
    train = Counter(int(y) for y in datamodule.splits["train"].labels)
    test = [int(y) for y in datamodule.splits["test"].labels]
    total = sum(train.values())
    prior = {label: count / total for label, count in train.items()}
    majority = max(train, key=train.__getitem__)
    return {
        "majority_acc": sum(y == majority for y in test) / len(test),
        "prior_ce": -sum(math.log(prior[y]) for y in test) / len(test),
        "test_size": len(test),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a folder of run dirs (an ablation folder)")
    parser.add_argument("--margin", type=float, default=0.05)
    args = parser.parse_args()
    register_resolvers()
    base = baselines([])
    print(
        f"test split: {base['test_size']} docstrings; majority class accuracy "
        f"{base['majority_acc']:.3f}; class-prior cross-entropy {base['prior_ce']:.3f}\n"
    )
    runs = load_runs(args.source)
    floor = base["majority_acc"] + args.margin
    print(
        f"| variant | runs | completed | diverged | failed | stalled (test acc < {floor:.3f}) "
        "| final test acc per seed |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for variant, group in runs.groupby("variant", sort=False):
        accs = group.get("final.test/acc", [])
        stalled = sum(1 for a in accs if not (a >= floor))  # NaN (no test) counts as stalled
        counts = group["status"].value_counts()
        per_seed = ", ".join(
            f"s{s}: {a:.3f}" if a == a else f"s{s}: –"
            for s, a in zip(group["seed"], accs, strict=True)
        )
        print(
            f"| {variant} | {len(group)} | {counts.get('completed', 0)} | "
            f"{counts.get('diverged', 0)} | {counts.get('failed', 0)} | {stalled} | {per_seed} |"
        )


if __name__ == "__main__":
    main()
