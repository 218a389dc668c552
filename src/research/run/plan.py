"""The pre-flight of a run, in one place for research-train, research-eval and the Python API.

Before Hydra writes anything and before torch loads: compose conf/ (declared defaults filled in),
validate every job against the declarations, check the machine, the launcher, the search space
and every job of a sweep, and claim the run dir. A mistake is one ConfigError line (exit status 2
on the command line), and nothing is written.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict, read_write

from research.config.compose import compose_all, hydra_node
from research.config.errors import ConfigError
from research.config.validate import undeclared, validate
from research.run.launch_checks import check_launch, launcher_elsewhere
from research.run.preflight import check_machine, eval_checkpoint
from research.run.run_dirs import RunDirClaim, claim_run_dir, given, pin
from research.utils.engine_versions import hydra_14, hydra_version

# Hydra flags that only print information; nothing is composed for them.
INFO_FLAGS = ("help", "hydra_help", "info", "shell_completion")


@dataclass
class Plan:
    """What the pre-flight checked, and the run dir it holds.

    `runs` is False where Hydra only prints (`--cfg`, `--info`). A multirun has its folder, the
    launcher that runs its jobs in processes of their own (None: in this one) and its jobs in
    launch order, where they are known before it starts; a single run has its claimed dir."""

    configs: list[dict[str, Any]] = field(default_factory=list)
    runs: bool = True
    sweep_dir: Path | None = None
    launcher: str | None = None
    jobs: list[list[str]] | None = None
    claim: RunDirClaim | None = None

    def release(self) -> None:
        """Let go of the claimed run dir once the run ended (removed if no run started in it)."""
        if self.claim is not None:
            self.claim.release()


def composed_configs(
    prog: str, config_name: str, overrides: Sequence[str], single: bool
) -> tuple[list[DictConfig], list[dict[str, Any]]]:
    """Every job's composition and its resolved config, checked against the declarations
    (research-eval: with the evaluated run's saved config and checkpoint)."""
    composed = compose_all(config_name, list(overrides), single=single)
    configs = [validate(cfg, entry=config_name) for cfg in composed]
    _check_declared(prog, configs)
    if config_name == "eval":
        _check_saved_runs(configs)
    return composed, configs


def _check_declared(prog: str, configs: list[dict[str, Any]]) -> None:
    """A `_target_` that no declaration checks: its values reach it unchecked (a warning), and
    Hydra 1.4's execution allow-list would refuse the call once the run started (an error)."""
    for node in dict.fromkeys(n for config in configs for n in undeclared(config)):
        if hydra_14():
            raise ConfigError(
                f"{node} has no declaration, and Hydra {hydra_version()} calls only declared "
                "targets (its execution allow-list); declare its parameters in the configs.py "
                "of its package"
            )
        print(
            f"{prog}: warning: {node} has no declaration, so its values are not checked before "
            "the run; declare its parameters in the configs.py of its package",
            file=sys.stderr,
        )


def _check_saved_runs(configs: list[dict[str, Any]]) -> None:
    """research-eval: the evaluated run's saved config with this evaluation's overrides must
    pass the same schema check as a research-train command line, and the checkpoint to test
    must be there."""
    from research.config.saved_run import saved_run_config

    for config in configs:
        saved_run_config(config["run_dir"], config.get("overrides") or [], config["trust_run_dir"])
        eval_checkpoint(Path(config["run_dir"]).expanduser().resolve(), config["ckpt"])


def plan_command(prog: str, config_name: str, args: list[str], parsed: Any) -> Plan:
    """The pre-flight of a research-train or research-eval command line (`parsed`: Hydra's
    reading of `args`). The dirs it claims are pinned in `args`, so that Hydra, and DDP's other
    ranks (which re-run the command line), use what was checked."""
    if any(getattr(parsed, flag, None) for flag in INFO_FLAGS):
        return Plan(runs=False)
    composed, configs = composed_configs(
        prog, config_name, parsed.overrides, single=not parsed.multirun
    )
    if parsed.cfg:
        return Plan(configs, runs=False)
    hydra = hydra_node(composed[0])
    return _checked(prog, config_name, hydra, configs, args, parsed.multirun, parsed.overrides)


def plan_config(prog: str, cfg: DictConfig) -> tuple[Plan, DictConfig]:
    """The Python API's pre-flight of a config from `research.compose`, edited or not: checked
    as the research-train command line of its overrides would be. Returns the plan and a copy
    of `cfg` whose `hydra.run.dir` is the claimed dir (the caller's config is left as it is)."""
    job = copy.deepcopy(cfg)  # resolving `${now:...}` caches it in the config it resolves in
    config = validate(job)
    _check_declared(prog, [config])
    args = [*map(str, job.hydra.overrides.hydra), *map(str, job.hydra.overrides.task)]
    plan = _checked(prog, "train", job.hydra, [config], args, False, args)
    if plan.claim is not None:
        with read_write(job.hydra), open_dict(job.hydra):
            job.hydra.run.dir = str(plan.claim.run_dir)
    return plan, job


def _checked(
    prog: str,
    config_name: str,
    hydra: Any,
    configs: list[dict[str, Any]],
    args: list[str],
    multirun: bool,
    overrides: Sequence[str],
) -> Plan:
    """The checks after validation: the machine, the launcher and the search; then the dirs,
    pinned in `args` (the command line)."""
    check_machine(configs, hydra)
    jobs = check_launch(prog, config_name, hydra, configs, multirun, overrides)
    if multirun:
        sweep_dir = Path(str(hydra.sweep.dir))
        if not given(args, "hydra.sweep.dir"):
            pin(args, "hydra.sweep.dir", sweep_dir)
        return Plan(configs, sweep_dir=sweep_dir, launcher=launcher_elsewhere(hydra), jobs=jobs)
    if config_name != "train":
        return Plan(configs)
    claim = claim_run_dir(configs[0], hydra, pinned=given(args, "hydra.run.dir"))
    if claim is not None:
        pin(args, "hydra.run.dir", claim.run_dir)
    return Plan(configs, claim=claim)
