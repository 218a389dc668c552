"""Compose and validate the configs a command line asks for, before Hydra launches any job.

A sweep is checked value by value (every value of every swept key at least once), so a typo in
the fifth value of a 20-job multirun fails in a second instead of after four finished jobs.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research import compat
from research.config.errors import ConfigError, one_line
from research.config.paths import config_dir
from research.config.validate import validate


def group_options(group: str) -> list[str]:
    """The option names of a config group (its YAML files), sorted."""
    folder = config_dir() / group
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def _values(override: Override) -> list[str] | None:
    """The string values an override takes; None for a search interval (sampled per job)."""
    if not override.is_sweep_override():
        return [override.get_value_element_as_str()]
    try:
        return list(override.sweep_string_iterator())
    except Exception:  # noqa: BLE001 - interval sweeps cannot be enumerated
        return None


def _check_choice(override: Override, values: list[str]) -> None:
    group = override.key_or_group
    options = group_options(group)
    if not options or override.is_delete() or override.package is not None:
        return
    for value in values:
        if value not in options and value != "null":
            raise ConfigError(
                f"{group}={value}: no such config in conf/{group}/; choose one of: "
                f"{', '.join(options)}"
            )


def expand(overrides: Sequence[str], single: bool = False) -> list[list[str]]:
    """Concrete override lists that together try every value of every swept key once.

    `single` (no -m): a swept value is refused in one line here; Hydra would reject it only when
    the job starts, with a multi-line message."""
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as err:
        raise ConfigError(one_line(err)) from None
    swept = [o.input_line for o in parsed if o.is_sweep_override()] if single else []
    if swept:
        raise ConfigError(
            f"{swept[0]} sweeps several values: add -m to run one job per value, or quote it "
            "('a,b') or make it a list ([a,b]) to pass one value"
        )
    columns: list[list[str]] = []
    for override in parsed:
        values = _values(override)
        if values is None:
            continue
        _check_choice(override, values)
        key = override.get_key_element()
        columns.append(
            [f"{key}={v}" if not override.is_delete() else key for v in values] if values else [key]
        )
    if not columns:
        return [[]]
    first = [col[0] for col in columns]
    combos = [first]
    for i, col in enumerate(columns):
        for value in col[1:]:
            combos.append([*first[:i], value, *first[i + 1 :]])
    return combos


def _dotted_keys(node: Any, at: str = "") -> list[str]:
    """Every key path below `node`, e.g. model.net.position."""
    if not isinstance(node, dict):
        return []
    paths = []
    for key, value in node.items():
        path = f"{at}.{key}" if at else str(key)
        paths += [path, *_dotted_keys(value, path)]
    return paths


def _known_keys(config_name: str, overrides: list[str], key: str) -> str:
    """'; did you mean <close key>?; <parent> has: a, b' for the unknown `key`, composed with
    the command line's group choices only (other key overrides may be unknown too)."""
    groups = [o for o in overrides if "." not in o.split("=", 1)[0]]
    try:
        cfg = compose(config_name=config_name, overrides=groups)
    except (HydraException, OmegaConfBaseException):
        return ""
    keys = _dotted_keys(OmegaConf.to_container(cfg, resolve=False))
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]}?" if close else ""
    parent = key
    while parent:
        parent = parent.rpartition(".")[0]
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if isinstance(node, DictConfig):
            names = sorted(str(k) for k in node if not str(k).startswith("_"))
            return f"{hint}; {parent or 'the config'} has: {', '.join(names)}"
    return hint


def _compose_one(config_name: str, overrides: list[str]) -> DictConfig:
    try:
        return compose(config_name=config_name, overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as err:
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
        if lines and lines[0].startswith("Could not override") and len(lines) > 1:
            key = lines[0].split("'")[1] if lines[0].count("'") >= 2 else ""
            known = _known_keys(config_name, overrides, key) if key else ""
            raise ConfigError(f"{lines[0].rstrip('.')}: no such key{known} ({lines[1]})") from None
        raise ConfigError(one_line(err)) from None


def compose_all(
    config_name: str, overrides: Sequence[str], single: bool = False
) -> list[DictConfig]:
    """The config of each concrete override list of `expand`, Hydra's own node included (its
    `hydra.sweep.dir` says where a multirun will write); Hydra is released afterwards."""
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return [_compose_one(config_name, combo) for combo in expand(overrides, single)]


def planned_jobs(hydra: DictConfig, overrides: Sequence[str]) -> list[list[str]] | None:
    """The override list of every job a multirun will launch, in launch order (Hydra numbers
    them from 0); None for a sweeper that decides its jobs as it goes (Optuna)."""
    import json

    target = str(OmegaConf.select(hydra, "sweeper._target_") or "")
    task = [o for o in overrides if not o.lstrip("+~").startswith(("hydra.", "hydra/"))]
    if target.endswith(".BasicSweeper"):
        return compat.hydra_basic_sweep_jobs(OverridesParser.create().parse_overrides(task))
    if target.endswith(".ListSweeper"):
        jobs = json.loads(Path(str(hydra.sweeper.jobs_file)).read_text())
        return [[*task, *job] for job in jobs]
    return None


def check_command_line(config_name: str, overrides: Sequence[str]) -> list[dict[str, Any]]:
    """Raise ConfigError (one line) if any job of this command line would get a bad config;
    return the resolved configs that were checked (the first is the first job's)."""
    return [validate(cfg, entry=config_name) for cfg in compose_all(config_name, overrides)]


def hydra_node(composed: DictConfig) -> DictConfig:
    """The `hydra` node (run and sweep dirs, sweeper, launcher) of a config `compose_all`
    returned. Its dirs' names hold the start time (Hydra caches `now` per config), so the
    caller reads them once, pins them, and reads the sweep's summary after."""
    node = OmegaConf.select(composed, "hydra")
    assert isinstance(node, DictConfig)
    return node
