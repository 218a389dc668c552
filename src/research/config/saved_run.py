"""A finished run's own config, as `research-eval` and `research-index` use it: read from the run
dir, changed by the evaluation's overrides, and checked exactly as `research-train` checks a
command line.

A run dir may come from someone else (copied, shared, downloaded), and building its config calls
whatever its `_target_`s name. So, unless the caller trusts the run dir, only declared components
are built: every `_target_`, at any depth (in `_args_` and lists too), must have a declaration
(the registry is the allowlist), and no value may hold an interpolation that building would
resolve (`${oc.create:...}` left behind by an escaped `\\${`), which could make a new node.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research.config.errors import ConfigError, one_line
from research.config.moved_keys import at_new_places, moved_key_hint
from research.config.registry import current_target, declaration
from research.config.validate import children, validate

SAVED_CONFIG = Path(".hydra") / "config.yaml"
# What building a saved run reads: research.run.build (datamodule, task) and the eval Trainer.
BUILT_GROUPS = ("data", "model", "loss", "optimizer", "trainer")
# Job run dirs of a sweep that a refusal names before saying how many more there are.
_SHOWN_JOBS = 3


def _current_targets(node: Any) -> None:
    """Rewrite moved `_target_`s in place, at any depth (a run saved before a move names the old
    path)."""
    if isinstance(node, DictConfig):
        target = node.get("_target_")
        if isinstance(target, str):
            node["_target_"] = current_target(target)
        for _, child in children(node):
            _current_targets(child)
    elif isinstance(node, ListConfig):
        for item in node:
            _current_targets(item)


def _job_number(job: Path) -> tuple[int, str]:
    """Sort key of a sweep's job folder (`<num>_<overrides>`): by job number, then name."""
    found = re.match(r"\d+", job.name)
    return (int(found.group()) if found else -1, job.name)


def _not_a_run(source: Path) -> ConfigError:
    """Why `source` (a folder without .hydra/config.yaml) cannot be evaluated; a sweep folder
    names its job run dirs, which can."""
    jobs = sorted((p.parent.parent for p in source.glob(f"*/{SAVED_CONFIG}")), key=_job_number)
    if not jobs:
        return ConfigError(f"run_dir={source} is not a run directory (no {SAVED_CONFIG})")
    shown = ", ".join(job.name for job in jobs[:_SHOWN_JOBS])
    more = f" and {len(jobs) - _SHOWN_JOBS} more" if len(jobs) > _SHOWN_JOBS else ""
    return ConfigError(
        f"run_dir={source} is a multirun folder holding {len(jobs)} job run dirs ({shown}{more}), "
        f"not a run directory; pass one job's run dir instead, e.g. {jobs[0]}"
    )


def _load(source: Path) -> DictConfig:
    """The saved config of the run in `source`, or a one-line refusal when it is missing,
    unreadable (bad YAML, cut short) or not a training run's config."""
    saved = source / SAVED_CONFIG
    if not saved.is_file():
        raise _not_a_run(source)
    broken = f"run_dir={source}: {SAVED_CONFIG} is damaged"
    hint = "restore it from a copy (metrics.json keeps the run's resolved config)"
    try:
        cfg = OmegaConf.load(saved)
    except Exception as err:  # noqa: BLE001 - YAML, OmegaConf and decoding errors alike
        raise ConfigError(f"{broken} ({one_line(err)}); {hint}") from None
    if not isinstance(cfg, DictConfig):
        kind = "a list" if isinstance(cfg, ListConfig) else type(cfg).__name__
        raise ConfigError(f"{broken}: it holds {kind}, not a run's config; {hint}")
    if "run_dir" in cfg:
        raise ConfigError(
            f"run_dir={source} is a research-eval run, not a training run; pass the run it "
            f"evaluated (run_dir={cfg.run_dir})"
        )
    missing = [key for key in BUILT_GROUPS if not isinstance(cfg.get(key), DictConfig)]
    if missing:
        raise ConfigError(f"{broken} (no {', '.join(missing)} node); {hint}")
    return cfg


def _shown(key: str, value: Any, limit: int = 100) -> str:
    """`key=value` on one line and short: control characters escaped, a long value cut."""
    text = repr(value) if len(repr(value)) <= limit else repr(value)[: limit - 3] + "..."
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in f"{key}={text}")


def _unsafe(node: Any, at: str = "") -> Iterator[str]:
    """Why each part of `node` (a resolved config) could build something undeclared: a
    `_target_` without a declaration, or a value that building would resolve again."""
    if isinstance(node, dict):
        target = node.get("_target_")
        if target is not None and (not isinstance(target, str) or declaration(target) is None):
            yield f"{_shown(f'{at}._target_' if at else '_target_', target)} has no declaration"
        for key, value in node.items():
            if key != "_target_":
                yield from _unsafe(value, f"{at}.{key}" if at else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _unsafe(value, f"{at}[{index}]")
    elif isinstance(node, str) and "${" in node:
        yield f"{_shown(at, node)} is an interpolation that building would resolve again"


def check_trusted(config: dict[str, Any], source: Path, opt_in: str) -> None:
    """Refuse a resolved saved config that could build anything but declared components."""
    found = next(_unsafe(config), None)
    if found is not None:
        raise ConfigError(
            f"run_dir={source}: {found}, and only declared components are built "
            "from a saved run (a run dir from elsewhere could run any code through its config); "
            f"pass {opt_in} if you trust this run dir"
        )


def _checked_overrides(cfg: DictConfig, overrides: Sequence[str]) -> list[str]:
    """The evaluation's overrides as OmegaConf's dotlist. Each sets a key the saved config has
    (`+key=value` adds one; OmegaConf would add any silently), and a value: a node such as
    `data` holds the option the run was trained with, and no other option's defaults."""
    dotlist = []
    for override in overrides:
        key, equals, value = override.partition("=")
        if not equals or not key.lstrip("+"):
            raise ConfigError(f"{override!r} is not key=value")
        if not key.startswith("+"):
            _check_settable(cfg, key, override, value)
        dotlist.append(override.lstrip("+"))
    return dotlist


def _check_settable(cfg: DictConfig, key: str, override: str, value: str) -> None:
    """`key` names a value of the saved config, or a key below a null one (which it creates); a
    node takes a mapping or null (`model.net.rope_scaling={rope_type: yarn, ...}`), not a name."""
    node: Any = cfg
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(node, DictConfig) or part not in node:
            moved = moved_key_hint(key, override)
            if moved:
                raise ConfigError(moved)
            names = sorted(str(k) for k in node) if isinstance(node, DictConfig) else []
            close = difflib.get_close_matches(part, names, n=1)
            hint = f"did you mean {'.'.join([*parts[:depth], close[0]])}? " if close else ""
            has = f"{'.'.join(parts[:depth]) or 'it'} has: {', '.join(names)}; " if names else ""
            raise ConfigError(
                f"{override}: the run's config has no {key}; {hint}{has}to add it write +{override}"
            )
        if _holds_null(node, part):
            return  # a key below it is created; null or a mapping replaces it
        node = dict(children(node))[part]
    if isinstance(node, DictConfig) and not _mapping_or_null(value):
        raise ConfigError(
            f"{override}: {key} is a node of the run's config, not a value; an evaluation changes "
            f"values ({key}.<key>=<value>), not the option the run was trained with"
        )


def _holds_null(node: DictConfig, key: str) -> bool:
    """Whether `node[key]` is null as written: an interpolation is not resolved to find out."""
    if OmegaConf.is_interpolation(node, key) or OmegaConf.is_missing(node, key):
        return False
    return node[key] is None


def _mapping_or_null(value: str) -> bool:
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return False
    return parsed is None or isinstance(parsed, dict)


def saved_run_config(
    run_dir: str | Path,
    overrides: Sequence[str] = (),
    trust: bool = False,
    opt_in: str = "trust_run_dir=true",
) -> dict[str, Any]:
    """The resolved, validated config of the run in `run_dir` with `overrides` applied. Unless
    `trust`, a config that names anything but declared components is refused (`opt_in` is how
    the caller's user says they trust it)."""
    source = Path(run_dir).expanduser().resolve()
    cfg = _load(source)
    try:
        _current_targets(cfg)
        at_new_places(cfg)  # a run saved before a key moved
    except OmegaConfBaseException as err:
        raise ConfigError(f"run_dir={source}: {SAVED_CONFIG}: {one_line(err)}") from None
    try:
        cfg.merge_with_dotlist(_checked_overrides(cfg, overrides))
    except ConfigError as err:
        raise ConfigError(f"overrides={list(overrides)}: {err}") from None
    except Exception as err:  # noqa: BLE001 - OmegaConf's parse and key errors alike
        raise ConfigError(f"overrides={list(overrides)}: {one_line(err)}") from None
    try:
        config = validate(cfg, entry="train")
    except ConfigError as err:
        where = f"overrides={list(overrides)}" if overrides else f"run_dir={source}"
        raise ConfigError(f"{where}: {err}") from None
    if not trust:
        check_trusted(config, source, opt_in)
    return config
