"""`python -m research.cli train|eval OVERRIDES`: a DDP rank > 0 that a job started on its node
(research.launch.ranks); it runs exactly that job and dies with it."""

from __future__ import annotations

import sys

from research.cli.app import eval_task, run, train_task
from research.launch.ranks import die_with_parent


def rank_main(argv: list[str]) -> None:
    die_with_parent()
    config_name, *args = argv
    prog, task = {"train": ("research-train", train_task), "eval": ("research-eval", eval_task)}[
        config_name
    ]
    sys.exit(run(prog, config_name, task, args))


if __name__ == "__main__":
    rank_main(sys.argv[1:])
