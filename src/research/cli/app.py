"""The Hydra application behind `research-train` and `research-eval`: check the command line before
torch or Lightning load, hand it to Hydra, and map the jobs' outcomes to an exit status.

Both take Hydra's usual arguments (overrides, `-m`, `--cfg`, `--help`). Every job's config is
composed and checked against the declarations first; a mistake exits with status 2 and one line.
A job that fails exits with status 1.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from research import compat
from research.cli.help import node_help, usage
from research.cli.run_dirs import (
    RunDirClaim,
    claim_attempt,
    claim_run_dir,
    given,
    is_rank_zero,
)
from research.cli.startup import imports_without_collections
from research.config.compose import (
    check_command_line,
    compose_all,
    hydra_node,
    planned_jobs,
    search_check_line,
    task_overrides,
)
from research.config.errors import ConfigError
from research.config.names import check_overrides, quoted
from research.config.paths import config_dir
from research.config.validate import undeclared, validate
from research.run.signals import Interrupted, signals_raise
from research.tracking.run_lock import RunDirBusy

# The user's command line, as every job records it.
COMMAND_ENV = "RESEARCH_COMMAND"
# Hydra flags that only print information; they skip the schema check.
INFO_FLAGS = ("help", "hydra_help", "info", "shell_completion")


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


def _check_saved_runs(configs: list[dict[str, Any]]) -> None:
    """research-eval: the evaluated run's saved config with this evaluation's overrides must
    pass the same schema check as a research-train command line, and the checkpoint to test
    must be there."""
    from research.config.saved_run import saved_run_config
    from research.run.preflight import eval_checkpoint

    for config in configs:
        saved_run_config(config["run_dir"], config.get("overrides") or [], config["trust_run_dir"])
        eval_checkpoint(Path(config["run_dir"]).expanduser().resolve(), config["ckpt"])


def _check_machine(configs: list[dict[str, Any]], hydra: Any) -> None:
    """What the schemas cannot know: files, folders and devices of this machine. Jobs that run
    elsewhere (SLURM) are not checked against this machine's devices."""
    from research.run.preflight import (
        check_accelerator,
        check_ckpt_path,
        check_declared_files,
        check_workers,
        check_writable,
    )

    remote = "slurm" in str(hydra.launcher.get("_target_", "")).lower()
    for log_dir in sorted({str(c["paths"]["log_dir"]) for c in configs}):
        check_writable(Path(log_dir), "paths.log_dir")
    for config in configs:
        check_ckpt_path(config)
        check_declared_files(config)
        if not remote:
            check_accelerator(config)
            check_workers(config)


def check_launch(
    prog: str, config_name: str, hydra: Any, configs: list[dict[str, Any]], parsed: Any
) -> list[list[str]] | None:
    """What the sweeper and launcher need of the checked configs (`parsed`: Hydra's arguments);
    the jobs a multirun will launch, in order, where they are known before it starts."""
    if not parsed.multirun:
        if is_rank_zero():  # DDP's other ranks re-run the job's own command line, without -m
            _check_one_job(prog, hydra)
        return None
    _check_multirun(configs)
    planned = planned_jobs(hydra, parsed.overrides)
    _check_search_settings(hydra, parsed.overrides)
    _check_searched(config_name, hydra, parsed.overrides)
    return planned


def _check_search_settings(hydra: Any, overrides: list[str]) -> None:
    """A search's own settings (storage, budget, sampler, workers), refused before the jobs of
    its space are composed, which takes seconds: the configured sweeper's class checks them
    where it offers `check_command(hydra, task_overrides)` (the Optuna one does)."""
    import importlib

    target = str(OmegaConf.select(hydra, "sweeper._target_"))
    module, _, name = target.rpartition(".")
    try:
        sweeper = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as err:  # Hydra: a traceback, later
        raise ConfigError(
            f"hydra.sweeper._target_={target}: {err}; choose a search with "
            "hparams_search=<option> (research-train --help lists them)"
        ) from None
    check = getattr(sweeper, "check_command", None)
    if check is not None:
        check(hydra, task_overrides(overrides))


def _check_multirun(configs: list[dict[str, Any]]) -> None:
    """`ckpt_path=last` resumes one run in that run's own dir; a multirun gives every job a new
    dir, so each job would fail (or resume elsewhere) after its dir was made."""
    if any(config.get("ckpt_path") == "last" for config in configs):
        raise ConfigError(
            "ckpt_path=last cannot run under -m: it resumes one run in its own run dir, and a "
            "multirun starts a new dir per job; resume each unfinished job alone "
            "(research-train <its overrides> ckpt_path=last), or give a .ckpt file to start "
            "every job from"
        )


def _check_searched(config_name: str, hydra: Any, overrides: list[str]) -> None:
    """Every key and value the sweeper's params would give a job, composed as a job would be."""
    line = search_check_line(hydra, overrides)
    if line:
        try:
            check_command_line(config_name, line)
        except ConfigError as err:
            raise ConfigError(f"hydra.sweeper.params: {err}") from None


def _check_one_job(prog: str, hydra: Any) -> None:
    """Without -m Hydra runs the one job here, past any sweeper or launcher: a search or a SLURM
    submission asked for without -m would quietly be a local run."""
    choices = hydra.runtime.choices
    for part, stock, group in (
        ("sweeper", ".BasicSweeper", "hparams_search"),
        ("launcher", ".BasicLauncher", "launcher"),
    ):
        if _replaced(hydra, part, stock):
            chosen = f"{group}={choices.get(group)}" if choices.get(group) else f"hydra/{part}"
            raise ConfigError(
                f"{chosen} takes effect in a multirun only; add -m ({prog} -m {chosen} ...), "
                "or drop it to run here"
            )


def _modes(parsed: Any) -> list[str]:
    """The Hydra run modes a command line asks for; Hydra accepts one and otherwise fails with a
    traceback after composing."""
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


def _warn_undeclared(prog: str, configs: list[dict[str, Any]]) -> None:
    """One line per `_target_` that no declaration checks: its values reach it unchecked."""
    for node in dict.fromkeys(n for config in configs for n in undeclared(config)):
        print(
            f"{prog}: warning: {node} has no declaration, so its values are not checked before "
            "the run; declare its parameters in the configs.py of its package",
            file=sys.stderr,
        )


def _sweep_failures(folder: Path) -> int:
    """Jobs of a finished multirun that did not complete, from its sweep_summary.json (written
    by the SweepSummary callback); a sweep that left no summary counts as failed."""
    from research.tracking.sweep_summary import failures

    try:
        # A pruned search trial was stopped on purpose by its study's pruner: not a failure.
        return failures(json.loads((folder / "sweep_summary.json").read_text()))
    except (OSError, ValueError, KeyError):
        return 1


def run(
    prog: str,
    config_name: str,
    task: Callable[[Any], Any],
    argv: Sequence[str] | None = None,
    command: str | None = None,
    one_attempt_in: Path | None = None,
) -> int:
    """Check the command line, hand it to Hydra, and map the jobs' outcome to an exit code.

    `command` is the line the user typed (research-ablate's, not the sweep it starts); every
    job records it (RESEARCH_COMMAND, so jobs in other processes see it too). With
    `one_attempt_in` (an ablation's folder), a job whose run id completed there or is running
    there in another process is skipped, however many callers launched it."""
    import hydra

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        check_overrides(args)  # before anything records them or writes them into a job script
        if "--help" in args or "-h" in args:
            return _print_help(prog, config_name, args)
    except ConfigError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    os.environ[COMMAND_ENV] = command or shlex.join([prog, *args])
    parsed = compat.hydra_args_parser().parse_args(args)
    modes = _modes(parsed)
    if len(modes) > 1:
        print(
            f"{prog}: error: {' and '.join(modes)} cannot be combined; give one of them "
            "(`--cfg job` shows one job: one value per key, no -m)",
            file=sys.stderr,
        )
        return 2
    if parsed.config_name or parsed.config_path:
        print(
            f"{prog}: error: --config-name and --config-path are fixed ({config_name}.yaml in "
            f"{config_dir()}); choose a setup with experiment=<name>, or add configs of your "
            "own with hydra.searchpath=[file:///your/configs]",
            file=sys.stderr,
        )
        return 2
    info_only = any(getattr(parsed, flag, None) for flag in INFO_FLAGS)
    informative = info_only or bool(parsed.cfg)
    multirun: Path | None = None
    launcher: str | None = None  # whose jobs run in processes of their own (submitit)
    planned: list[list[str]] | None = None
    claim: RunDirClaim | None = None
    if not info_only:
        try:
            composed = compose_all(config_name, parsed.overrides, single=not parsed.multirun)
            configs = [validate(cfg, entry=config_name) for cfg in composed]
            _warn_undeclared(prog, configs)
            if config_name == "eval":
                _check_saved_runs(configs)
            if not informative:
                hydra_cfg = hydra_node(composed[0])
                _check_machine(configs, hydra_cfg)
                planned = check_launch(prog, config_name, hydra_cfg, configs, parsed)
                if parsed.multirun:
                    multirun = Path(str(hydra_cfg.sweep.dir))
                    launcher = _launcher_elsewhere(hydra_cfg)
                    if not given(args, "hydra.sweep.dir"):
                        args.append(f"hydra.sweep.dir={quoted(multirun)}")
                elif config_name == "train":
                    claim = claim_run_dir(args, configs[0], hydra_cfg)
        except (ConfigError, RunDirBusy) as err:
            print(f"{getattr(err, 'prog', None) or prog}: error: {err}", file=sys.stderr)
            return 2
    outcomes: list[Any] = []
    started: list[int] = []

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
        if outcome.interrupted is not None and multirun is not None:
            raise outcome.interrupted  # stops the sweep: no further job starts
        return outcome.value

    # Keep argv[0]: Lightning's DDP launcher re-runs it for the other ranks.
    saved_argv = sys.argv
    sys.argv = [sys.argv[0] if sys.argv and sys.argv[0] else prog, *args]
    main = hydra.main(config_path=str(config_dir()), config_name=config_name, version_base="1.3")
    try:
        with signals_raise():
            main(job)()
    except Interrupted as stop:
        return _stopped(prog, stop, (multirun, launcher), planned, started, bool(outcomes))
    finally:
        sys.argv = saved_argv
        if claim is not None:
            claim.release()
    if informative:
        return 0
    if multirun is not None:
        return 1 if _sweep_failures(multirun) else 0
    return outcomes[0].exit_code if len(outcomes) == 1 else 1


def _replaced(hydra: Any, part: str, stock: str) -> bool:
    """Whether the command's sweeper or launcher (`part`) is another than Hydra's `stock` one."""
    return not str(OmegaConf.select(hydra, f"{part}._target_") or "").endswith(stock)


def _launcher_elsewhere(hydra: Any) -> str | None:
    """The launcher whose jobs run in processes of their own (submitit), or None for Hydra's
    basic launcher, which runs them in this one."""
    if not _replaced(hydra, "launcher", ".BasicLauncher"):
        return None
    return str(hydra.runtime.choices.get("hydra/launcher"))


def _stopped(
    prog: str,
    stop: Interrupted,
    sweep: tuple[Path | None, str | None],
    planned: list[list[str]] | None,
    started: list[int],
    any_job_ended: bool,
) -> int:
    """A signal ended the command: a sweep records which jobs never started; the exit status
    is 128 + the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP). Jobs handed to a launcher's own
    processes (SLURM's) go on without this command: say so, and how to stop them."""
    from research.tracking.sweep_summary import record_stopped_sweep

    multirun, launcher = sweep
    if multirun is not None:
        never = None
        if planned is not None and launcher is None:
            never = [" ".join(job) for i, job in enumerate(planned) if i not in started]
        record_stopped_sweep(multirun, never, stop.name)
        if launcher is not None:
            print(_still_queued(multirun, launcher), file=sys.stderr)
    elif not any_job_ended:
        print(f"{prog}: interrupted by {stop.name} before the run started", file=sys.stderr)
    return stop.exit_code


def _still_queued(multirun: Path, launcher: str) -> str:
    """Where the handed-off jobs are; for SLURM the job ids to cancel (submitit's folder per
    submission is named by its job id, `%j`). Local submitit jobs are child processes, which a
    Ctrl-C in the terminal reaches too: whether they go on is not known here."""
    folder = multirun / ".submitit"
    ids = sorted(p.name for p in folder.glob("*") if p.name.isdigit()) if folder.is_dir() else []
    if launcher == "submitit_slurm" and ids:
        return (
            f"sweep: its jobs were handed to {launcher} and go on without this command; "
            f"scancel {' '.join(ids)} stops them"
        )
    return f"sweep: its jobs were handed to {launcher}, whose job folders are under {folder}"
