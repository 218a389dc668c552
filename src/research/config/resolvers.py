"""OmegaConf resolvers that the YAML files use; registered before any composition."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from omegaconf import OmegaConf

from research.utils.engine_versions import register_resolver

_MAX_SUFFIX = 96


def run_suffix(override_dirname: str) -> str:
    """Turn a job's overrides into a folder-name suffix so run dirs say what changed.

    Slashes and other path-hostile characters are replaced; long suffixes are cut and keep a hash
    of the full text, so distinct override sets never collapse onto one name.
    """
    if not override_dirname:
        return ""
    safe = re.sub(r"[^A-Za-z0-9._+-]", "-", override_dirname)
    if len(safe) > _MAX_SUFFIX:
        digest = hashlib.sha1(override_dirname.encode()).hexdigest()[:8]
        safe = f"{safe[: _MAX_SUFFIX - 9]}-{digest}"
    return "_" + safe


def coalesce(*values: object) -> object:
    """The first value that is not null (e.g. an ablation variant, else the task name)."""
    return next((v for v in values if v is not None), None)


def longest(*values: object) -> int:
    """The largest integer among the arguments, lists flattened and nulls skipped (e.g. the
    longest of a training context and its evaluation lengths)."""
    flat: list = []
    for value in values:
        if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
            flat.extend(value)  # type: ignore[arg-type]
        elif value is not None:
            flat.append(value)
    return max(flat)


def optuna_direction(mode: str) -> str:
    """A checkpoint monitor's mode as Optuna's study direction."""
    return {"max": "maximize", "min": "minimize"}[mode]


def task_monitor(target: str) -> str:
    """The validation metric a task's best checkpoint follows by default (its declaration's
    `monitor`): val/acc for a classifier, val/loss for a language model, val/ndcg@10 for a
    retriever."""
    from research.config.registry import declaration
    from research.utils.metric_names import DEFAULT_MONITOR

    return getattr(declaration(target), "monitor", DEFAULT_MONITOR)


def checkpoint_mode(monitor: str | None, target: str) -> str:
    """max or min, as the monitored metric's name says (val/acc max, val/loss min). A name that
    says neither is refused, not guessed: a wrong guess keeps the worst checkpoint as `best`."""
    from difflib import get_close_matches

    from research.config.errors import ConfigError
    from research.utils.metric_names import direction_by_name

    if monitor is None:
        return "min"  # nothing is monitored: Lightning's own default, which nothing reads
    mode = direction_by_name(monitor)
    if mode is None:
        default = task_monitor(target)
        hint = f"did you mean {default}? If not, " if get_close_matches(monitor, [default]) else ""
        raise ConfigError(
            f"callbacks.model_checkpoint.monitor={monitor}: its name says neither max nor min; "
            f"{hint}set callbacks.model_checkpoint.mode=max or min"
        )
    return mode


def _project_root() -> str:
    from research.config.paths import project_root

    return str(project_root())


def _default_backbone() -> str:
    from research.utils.backbones import default_backbone

    return default_backbone()


RESOLVERS: dict[str, Callable[..., Any]] = {
    "run_suffix": run_suffix,
    "project_root": _project_root,
    "optuna_direction": optuna_direction,
    "sum": lambda *values: sum(values),
    "max": lambda *values: max(values),
    "longest": longest,
    "coalesce": coalesce,
    "task_monitor": task_monitor,
    "checkpoint_mode": checkpoint_mode,
    "default_backbone": _default_backbone,
}


def register_resolvers() -> None:
    """Idempotent: entry points and tests may both call it."""
    for name, resolver in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            register_resolver(name, resolver)
