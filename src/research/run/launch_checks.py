"""What a command's sweeper and launcher need of its checked configs, found before Hydra starts
them: a search's own settings and every key and value of its space, a resume under `-m`, and a
search or launcher asked for where Hydra would quietly run one local job instead."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from omegaconf import OmegaConf

from research.config.compose import (
    check_command_line,
    planned_jobs,
    search_check_line,
    task_overrides,
)
from research.config.errors import ConfigError
from research.run.run_dirs import is_rank_zero


def check_launch(
    prog: str,
    config_name: str,
    hydra: Any,
    configs: list[dict[str, Any]],
    multirun: bool,
    overrides: Sequence[str],
) -> list[list[str]] | None:
    """Check what the sweeper and launcher of `hydra` need of the checked `configs` (composed
    from `overrides`); the jobs a multirun will launch, in order, where they are known before it
    starts."""
    if not multirun:
        if is_rank_zero():  # DDP's other ranks re-run the job's own command line, without -m
            _check_one_job(prog, hydra)
        return None
    _check_multirun(configs)
    planned = planned_jobs(hydra, overrides)
    _check_search_settings(hydra, overrides)
    _check_searched(config_name, hydra, overrides)
    return planned


def _sweeper_class(hydra: Any) -> Any:
    """The configured sweeper's class, refused in one line where it names none."""
    target = str(OmegaConf.select(hydra, "sweeper._target_"))
    module, _, name = target.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as err:  # Hydra: a traceback, later
        raise ConfigError(
            f"hydra.sweeper._target_={target}: {err}; choose a search with "
            "hparams_search=<option> (research-train --help lists them)"
        ) from None


def _check_search_settings(hydra: Any, overrides: Sequence[str]) -> None:
    """A search's own settings (storage, budget, sampler, workers), refused before the jobs of
    its space are composed, which takes seconds: the configured sweeper's class checks them
    where it offers `check_command(hydra, task_overrides)` (the Optuna one does)."""
    check = getattr(_sweeper_class(hydra), "check_command", None)
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


def _check_searched(config_name: str, hydra: Any, overrides: Sequence[str]) -> None:
    """Every key and value the sweeper's params would give a job, composed as a job would be."""
    values = getattr(_sweeper_class(hydra), "check_line", None)
    if values is not None:  # the sweeper knows what its trials draw
        task = task_overrides(overrides)
        line = [*(o for o in overrides if o not in task), *values(hydra, task)]
    else:
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


def _replaced(hydra: Any, part: str, stock: str) -> bool:
    """Whether the command's sweeper or launcher (`part`) is another than Hydra's `stock` one."""
    return not str(OmegaConf.select(hydra, f"{part}._target_") or "").endswith(stock)


def launcher_elsewhere(hydra: Any) -> str | None:
    """The launcher whose jobs run in processes of their own (submitit), or None for Hydra's
    basic launcher, which runs them in this one."""
    if not _replaced(hydra, "launcher", ".BasicLauncher"):
        return None
    return str(hydra.runtime.choices.get("hydra/launcher"))
