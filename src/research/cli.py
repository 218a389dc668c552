"""Console entry points. Config mistakes are caught here, before torch or Lightning load.

`research-train` and `research-eval` take Hydra's usual arguments (overrides, `-m`, `--cfg`,
`--help`). Every job's config is composed and checked against the typed schemas first; a mistake
exits with status 2 and one line. A job that fails exits with status 1.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from research.config.compose import compose_all, config_dir, sweep_dir
from research.config.errors import ConfigError
from research.config.validate import validate

# The user's command line, as every job records it.
COMMAND_ENV = "RESEARCH_COMMAND"
# Hydra flags that only print information; they skip the schema check.
_INFO_FLAGS = ("help", "hydra_help", "info", "shell_completion")

_USAGE = """{prog}: {what}

usage: {prog} [group=option ...] [key=value ...] [-m] [--cfg job] [--hydra-help]

examples:
{examples}

config groups (conf/<group>/<option>.yaml):
{groups}

`--cfg job` prints the composed config; `-m` sweeps comma-separated values (a multirun);
mistakes in any job's config are reported before anything runs. README.md has the tour.
"""
_ABOUT = {
    "train": (
        "train a model composed from conf/ (Hydra + Lightning + W&B offline)",
        [
            "research-train optimizer=sgd optimizer.lr=0.05 seed=3",
            "research-train -m optimizer.lr=1e-3,3e-3 seed=0,1,2",
            "research-train ckpt_path=last   # resume this config's unfinished run",
        ],
    ),
    "eval": (
        "re-evaluate a finished run's checkpoint with that run's own saved config",
        [
            "research-eval run_dir=logs/train/runs/<run>",
            "research-eval run_dir=logs/train/runs/<run> ckpt=last split=val",
        ],
    ),
}


def _help(prog: str, config_name: str) -> str:
    """Our own --help: Hydra's lists every group option by composing each one (about 1 s)."""
    from research.config.compose import group_options

    what, examples = _ABOUT[config_name]
    groups = [
        f"  {folder.name:15s} {', '.join(group_options(folder.name))}"
        for folder in sorted(config_dir().iterdir())
        if folder.is_dir() and folder.name not in ("hydra", "paths") and group_options(folder.name)
    ]
    return _USAGE.format(
        prog=prog,
        what=what,
        examples="\n".join(f"  {e}" for e in examples),
        groups="\n".join(groups) if config_name == "train" else "  (none: see run_dir, ckpt)",
    )


def train_task(cfg: Any) -> Any:
    """The Hydra task of research-train (imports torch and Lightning only when a job runs)."""
    from research.train import train

    return train(cfg)


def eval_task(cfg: Any) -> Any:
    """The Hydra task of research-eval."""
    from research.evaluate import evaluate

    return evaluate(cfg)


def _check_saved_runs(configs: list[dict[str, Any]]) -> None:
    """research-eval: the evaluated run's saved config with this evaluation's overrides must
    pass the same schema check as a research-train command line."""
    from research.config.saved_run import saved_run_config

    for config in configs:
        saved_run_config(config["run_dir"], config.get("overrides") or [])


def _sweep_failures(folder: Path) -> int:
    """Jobs of a finished multirun that did not complete, from its sweep_summary.json (written
    by the SweepSummary callback); a sweep that left no summary counts as failed."""
    try:
        summary = json.loads((folder / "sweep_summary.json").read_text())
        # A pruned search trial was stopped on purpose by its study's pruner: not a failure.
        return int(summary["jobs"]) - int(summary["completed"]) - int(summary.get("pruned", 0))
    except (OSError, ValueError, KeyError):
        return 1


def _continue_in_place(config: dict[str, Any]) -> list[str]:
    """`ckpt_path=last` continues the unfinished run in its own run dir, so its history, best
    checkpoint and W&B id carry on as if it had never stopped."""
    from pathlib import Path

    from research.tracking.identity import run_id
    from research.tracking.run_dir import find_unfinished_run

    previous = find_unfinished_run(Path(config["paths"]["log_dir"]), run_id(config))
    return [f"hydra.run.dir='{previous}'"] if previous else []


def run(
    prog: str,
    config_name: str,
    task: Callable[[Any], Any],
    argv: Sequence[str] | None = None,
    command: str | None = None,
) -> int:
    """Check the command line, hand it to Hydra, and map the jobs' outcome to an exit code.

    `command` is the line the user typed (research-ablate's, not the sweep it starts); every
    job records it (RESEARCH_COMMAND, so jobs in other processes see it too)."""
    import shlex

    import hydra
    from hydra._internal.utils import get_args_parser

    args = list(sys.argv[1:] if argv is None else argv)
    os.environ[COMMAND_ENV] = command or shlex.join([prog, *args])
    parsed = get_args_parser().parse_args(args)
    if parsed.help:
        print(_help(prog, config_name))
        return 0
    info_only = any(getattr(parsed, flag, None) for flag in _INFO_FLAGS)
    informative = info_only or bool(parsed.cfg)
    multirun: Path | None = None
    if not info_only:
        try:
            composed = compose_all(config_name, parsed.overrides)
            configs = [validate(cfg, entry=config_name) for cfg in composed]
            if config_name == "eval":
                _check_saved_runs(configs)
        except ConfigError as err:
            print(f"{prog}: error: {err}", file=sys.stderr)
            return 2
        explicit_dir = any(a.startswith("hydra.run.dir=") for a in args)
        if not parsed.multirun and not explicit_dir and configs[0].get("ckpt_path") == "last":
            args += _continue_in_place(configs[0])
        if parsed.multirun and not informative:
            multirun = sweep_dir(composed[0])
            if not any(a.startswith("hydra.sweep.dir=") for a in args):
                args.append(f"hydra.sweep.dir='{multirun}'")
    statuses: list[str] = []

    def job(cfg: Any) -> Any:
        outcome = task(cfg)
        statuses.append(outcome.status)
        return outcome.value

    # Keep argv[0]: Lightning's DDP launcher re-runs it for the other ranks.
    sys.argv = [sys.argv[0] if sys.argv and sys.argv[0] else prog, *args]
    main = hydra.main(config_path=str(config_dir()), config_name=config_name, version_base="1.3")
    main(job)()
    if informative:
        return 0
    if multirun is not None:
        return 1 if _sweep_failures(multirun) else 0
    return 0 if statuses == ["completed"] else 1


def train_main() -> None:
    sys.exit(run("research-train", "train", train_task))


def eval_main() -> None:
    sys.exit(run("research-eval", "eval", eval_task))


def rank_main(argv: Sequence[str]) -> None:
    """`python -m research.cli train OVERRIDES`: a DDP rank > 0 that a job started
    (research.ranks); it dies with that job."""
    from research.ranks import die_with_parent

    die_with_parent()
    config_name, *args = argv
    prog, task = {"train": ("research-train", train_task), "eval": ("research-eval", eval_task)}[
        config_name
    ]
    sys.exit(run(prog, config_name, task, args))


if __name__ == "__main__":
    rank_main(sys.argv[1:])
