"""The Python API, for notebooks and scripts: the same configs, checks, builds and runs as the
command line.

    import research

    cfg = research.compose("train", ["model=cnn", "trainer.max_epochs=2"])
    datamodule, module = research.build(cfg)   # what research-train would build, untrained
    run = research.train(cfg)                  # a run dir exactly like research-train's
    run.status, run.run_dir, run.best["val/acc"]

Paths resolve as for the command line: under $RESEARCH_ROOT, else the project whose conf/ is
used (the checkout), else the current directory (said on stderr); `paths.root=<dir>` chooses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from research.config.errors import ConfigError
from research.config.instantiate import HYDRA_HOOKS
from research.config.paths import config_dir
from research.config.validate import validate
from research.run.plan import composed_configs, plan_config
from research.utils.logging_state import root_logging_restored


@dataclass(frozen=True)
class Run:
    """How a run ended, read from its metrics.json."""

    run_dir: Path
    status: str
    best: dict[str, Any] = field(default_factory=dict)
    final: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict, repr=False)


def compose(config_name: str = "train", overrides: Sequence[str] = ()) -> DictConfig:
    """The config `research-<config_name> <overrides>` would run, checked against the
    declarations (a mistake raises ConfigError with the CLI's one-line message). Like Hydra's
    `compose(..., return_hydra_config=True)` it keeps the `hydra` node, which says where a run
    of it goes; edit the other values freely before `build` or `train`."""
    _check_arguments(config_name, overrides)
    (cfg,), _ = composed_configs("research.compose", config_name, overrides, single=True)
    return cfg


def _check_arguments(config_name: Any, overrides: Any) -> None:
    """compose's arguments in the order Hydra's compose takes them; swapped or given one string,
    they failed deep inside Hydra (`'list' object has no attribute 'endswith'`, or a parse
    error of the string's first letter)."""
    entries = sorted(p.stem for p in config_dir().glob("*.yaml"))
    if config_name not in entries:
        raise ConfigError(
            f"compose: config_name={config_name!r} is not an entry config; choose one of: "
            f"{', '.join(entries)} (the overrides come second: compose('train', ['seed=1']))"
        )
    if isinstance(overrides, str) or not all(isinstance(o, str) for o in overrides):
        raise ConfigError(
            f"compose: overrides={overrides!r} must be a list of strings such as ['seed=1']"
        )


def build(cfg: DictConfig) -> tuple[Any, Any]:
    """(datamodule, LightningModule) of a composed config, seeded as a run of it would be."""
    import lightning as L

    from research.run.build import build_task

    config = validate(cfg)
    L.seed_everything(config["seed"], workers=True, verbose=False)
    return build_task(config)


def train(cfg: DictConfig) -> Run:
    """Train, test and record one run of a config from `compose`, in a run dir claimed as
    research-train claims it (a new one named from the time and the overrides; for
    `ckpt_path=last` the unfinished run's own). Before anything is written, the config passes
    research-train's pre-flight (research.run.plan): a mistake raises its one-line ConfigError.
    Returns how the run ended (a failed run is a Run with status `failed`, its error in
    `record["error"]`, as research-train records it)."""
    from research import compat
    from research.run.fit import train as train_task
    from research.tracking.run_dir import read_metrics

    if not isinstance(cfg, DictConfig) or "hydra" not in cfg:
        raise ConfigError("train(cfg) needs a config from research.compose (it has no hydra node)")
    plan, job = plan_config("research-train", cfg)
    try:
        with root_logging_restored():
            done = compat.hydra_run_job(job, train_task, str(config_dir()), HYDRA_HOOKS)
    finally:
        plan.release()
    run_dir = Path(done.hydra_cfg.hydra.runtime.output_dir)
    record = read_metrics(run_dir) or {}
    return Run(
        run_dir=run_dir,
        status=str(record.get("status", "failed")),
        best=dict(record.get("best") or {}),
        final=dict(record.get("final") or {}),
        record=record,
    )
