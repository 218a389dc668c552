"""The Hydra application behind `research-train` and `research-eval`: parse the command line,
run its pre-flight (research.run.plan) before torch or Lightning load, hand it to Hydra, and map
the jobs' outcomes to an exit status (research.cli.exit_status).

Both take Hydra's usual arguments (overrides, `-m`, `--cfg`, `--help`). A mistake exits with
status 2 and one line; a job that fails exits with status 1.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from research import compat
from research.cli.exit_status import exit_status, stopped
from research.cli.help import node_help, usage
from research.cli.startup import imports_without_collections
from research.config.errors import ConfigError
from research.config.instantiate import HYDRA_HOOKS
from research.config.names import check_overrides
from research.config.paths import config_dir
from research.run.plan import Plan, plan_command
from research.run.run_dirs import claim_attempt
from research.run.signals import Interrupted, signals_raise
from research.tracking.run_lock import RunDirBusy
from research.utils.engine_versions import execution_whitelist, version_base

# The user's command line, as every job records it.
COMMAND_ENV = "RESEARCH_COMMAND"


def train_task(cfg: Any) -> Any:
    """The Hydra task of research-train (imports torch and Lightning only when a job runs)."""
    with imports_without_collections():
        from research.run.fit import train

    return train(cfg)


def eval_task(cfg: Any) -> Any:
    """The Hydra task of research-eval."""
    with imports_without_collections():
        from research.run.evaluate import evaluate

    return evaluate(cfg)


def run(
    prog: str,
    config_name: str,
    task: Callable[[Any], Any],
    argv: Sequence[str] | None = None,
    command: str | None = None,
    one_attempt_in: Path | None = None,
) -> int:
    """Parse the command line, plan it, hand it to Hydra, and map the jobs' outcome to an exit
    code.

    `command` is the line the user typed (research-ablate's, not the sweep it starts); every
    job records it (RESEARCH_COMMAND, so jobs in other processes see it too). With
    `one_attempt_in` (an ablation's folder), a job whose run id completed there or is running
    there in another process is skipped, however many callers launched it."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        check_overrides(args)  # before anything records them or writes them into a job script
        if "--help" in args or "-h" in args:
            return _print_help(prog, config_name, args)
        os.environ[COMMAND_ENV] = command or shlex.join([prog, *args])
        plan = plan_command(prog, config_name, args, _parse(config_name, args))
    except (ConfigError, RunDirBusy) as err:
        print(f"{getattr(err, 'prog', None) or prog}: error: {err}", file=sys.stderr)
        return 2
    outcomes: list[Any] = []
    started: list[int] = []
    job = _job(prog, task, plan, one_attempt_in, (outcomes, started))
    try:
        _hydra(prog, config_name, args, job)
    except Interrupted as stop:
        return stopped(prog, stop, plan, started, bool(outcomes))
    finally:
        plan.release()
    return exit_status(plan, outcomes)


def _parse(config_name: str, args: list[str]) -> Any:
    """Hydra's reading of the command line, refusing what Hydra would accept only to fail with
    a traceback after composing: two run modes, another entry config."""
    parsed = compat.hydra_args_parser().parse_args(args)
    modes = _modes(parsed)
    if len(modes) > 1:
        raise ConfigError(
            f"{' and '.join(modes)} cannot be combined; give one of them "
            "(`--cfg job` shows one job: one value per key, no -m)"
        )
    if parsed.config_name or parsed.config_path:
        raise ConfigError(
            f"--config-name and --config-path are fixed ({config_name}.yaml in "
            f"{config_dir()}); choose a setup with experiment=<name>, or add configs of your "
            "own with hydra.searchpath=[file:///your/configs]"
        )
    return parsed


def _modes(parsed: Any) -> list[str]:
    """The Hydra run modes a command line asks for; Hydra accepts one."""
    flags = (
        ("-m", parsed.multirun),
        ("--run", parsed.run),
        ("--cfg", bool(parsed.cfg)),
        ("--info", parsed.info is not None),
        ("--shell-completion", parsed.shell_completion),
    )
    return [name for name, on in flags if on]


def _print_help(prog: str, config_name: str, args: list[str]) -> int:
    """`--help`: the usage; `--help NODE ...`: the declared fields of each NODE in the config
    the overrides on the same command line compose."""
    nodes = [a for a in args if not a.startswith("-") and "=" not in a]
    if not nodes:
        print(usage(prog, config_name))
        return 0
    overrides = [a for a in args if not a.startswith("-") and "=" in a]
    print(node_help(config_name, overrides, nodes))
    return 0


def _job(
    prog: str,
    task: Callable[[Any], Any],
    plan: Plan,
    one_attempt_in: Path | None,
    ended: tuple[list[Any], list[int]],
) -> Callable[[Any], Any]:
    """The function Hydra calls for each job: `task`, whose outcome it adds to `ended`'s first
    list (the job's number to its second, when it starts). A signal that ended a job of a sweep
    stops the sweep: no further job starts."""
    outcomes, started = ended

    def job(cfg: Any) -> Any:
        from hydra.core.hydra_config import HydraConfig
        from omegaconf import OmegaConf

        started.append(int(OmegaConf.select(HydraConfig.get(), "job.num", default=0) or 0))
        attempt = None
        if one_attempt_in is not None:
            attempt = claim_attempt(prog, one_attempt_in, cfg)
            if attempt is None:
                return None
        try:
            outcome = task(cfg)
        finally:
            if attempt is not None:
                attempt.release()
        outcomes.append(outcome)
        if outcome.interrupted is not None and plan.sweep_dir is not None:
            raise outcome.interrupted
        return outcome.value

    return job


def _hydra(prog: str, config_name: str, args: list[str], job: Callable[[Any], Any]) -> None:
    """Run the planned command line (`args`, its dirs pinned) through Hydra's own entry point."""
    import hydra

    # Keep argv[0]: Lightning's DDP launcher re-runs it for the other ranks.
    saved_argv = sys.argv
    sys.argv = [sys.argv[0] if sys.argv and sys.argv[0] else prog, *args]
    main = hydra.main(config_path=str(config_dir()), config_name=config_name, **version_base())
    try:
        with signals_raise(), execution_whitelist(HYDRA_HOOKS):
            main(job)()
    finally:
        sys.argv = saved_argv
