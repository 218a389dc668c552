"""Record what the xiong2020 runs measured, for `derive.py` to re-derive the README from.

    python experiments/xiong2020/collect.py [--logs logs/ablations]

Writes, inside experiments/xiong2020/:
- `baselines.json`: the trivial baselines on the validation and test splits (the majority
  class's accuracy, and the cross-entropy of always predicting the training split's class
  frequencies: what a model that ignores its input reaches), from the framework's datamodule;
- `runs/<ablation>/<variant>_s<seed>.json`: one record per run of each ablation
  (research.reports.run_records), with the first and last layer's FFN-output gradient norm per
  logged step;
- `runs/<ablation>.decisions.json`: what `research-ablate --until-decided` decided, where it ran.
"""

from __future__ import annotations

import argparse
import math
import shutil
from collections import Counter
from pathlib import Path

from research.ablation.decide import DECISIONS_FILE
from research.ablation.spec import load_ablation
from research.config.compose import check_command_line
from research.config.resolvers import register_resolvers
from research.reports.errors import ReportError
from research.reports.run_records import write_records
from research.run.build import build_task
from research.utils.atomic import write_json_atomic

HERE = Path(__file__).parent
ABLATIONS = ("xiong2020_lr", "xiong2020", "xiong2020_depth")


def baselines() -> dict[str, dict[str, float]]:
    """Per evaluation split: its size, the majority class's accuracy, the class prior's
    cross-entropy (class frequencies of the training split)."""
    (config,) = check_command_line("train", ["experiment=xiong2020"])
    datamodule, _ = build_task(config)
    datamodule.setup("fit")
    datamodule.setup("test")
    train = Counter(int(y) for y in datamodule.splits["train"].labels)
    total = sum(train.values())
    prior = {label: count / total for label, count in train.items()}
    majority = max(train, key=train.__getitem__)
    found = {}
    for split in ("val", "test"):
        labels = [int(y) for y in datamodule.splits[split].labels]
        found[split] = {
            "size": len(labels),
            "majority_acc": sum(y == majority for y in labels) / len(labels),
            "prior_ce": -sum(math.log(prior[y]) for y in labels) / len(labels),
        }
    return found


def depth(ablation: str) -> int:
    """The encoder depth of an ablation's runs (its base overrides, else the experiment's 6)."""
    for override in load_ablation(ablation)["base"]:
        key, _, value = override.partition("=")
        if key == "model.net.n_layers":
            return int(value)
    return 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=Path, default=Path("logs/ablations"))
    args = parser.parse_args()
    register_resolvers()
    write_json_atomic(HERE / "baselines.json", baselines())
    for ablation in ABLATIONS:
        last = depth(ablation) - 1
        patterns = [f"grad_norm/layer_{i}/linear2.weight" for i in (0, last)]
        try:
            written = write_records(args.logs / ablation, HERE / "runs" / ablation, patterns)
        except ReportError as error:
            raise SystemExit(
                f"{ablation}: {error} (run `research-ablate {ablation}` first)"
            ) from None
        decisions = args.logs / ablation / DECISIONS_FILE
        if decisions.exists():
            shutil.copyfile(decisions, HERE / "runs" / f"{ablation}.decisions.json")
        print(f"{ablation}: {len(written)} run records")


if __name__ == "__main__":
    main()
