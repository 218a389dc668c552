"""A finished run's own config, as `research-eval` uses it: read from the run dir, changed by
the evaluation's overrides, and checked exactly as `research-train` checks a command line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from research import compat
from research.config.errors import ConfigError, one_line
from research.config.registry import current_target
from research.config.validate import validate

SAVED_CONFIG = Path(".hydra") / "config.yaml"


def _current_targets(node: Any) -> None:
    """Rewrite moved `_target_`s in place, at any depth (a run saved before a move names the old
    path)."""
    if isinstance(node, DictConfig):
        target = node.get("_target_")
        if isinstance(target, str):
            node["_target_"] = current_target(target)
        for key in node:
            _current_targets(compat.omegaconf_child(node, key))
    elif isinstance(node, ListConfig):
        for item in node:
            _current_targets(item)


def saved_run_config(run_dir: str | Path, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved, validated config of the run in `run_dir` with `overrides` applied."""
    source = Path(run_dir).expanduser().resolve()
    saved = source / SAVED_CONFIG
    if not saved.is_file():
        raise ConfigError(f"run_dir={source} is not a run directory (no {SAVED_CONFIG})")
    cfg = OmegaConf.load(saved)
    if "run_dir" in cfg:
        raise ConfigError(
            f"run_dir={source} is a research-eval run, not a training run; pass the run it "
            f"evaluated (run_dir={cfg.run_dir})"
        )
    _current_targets(cfg)
    try:
        cfg.merge_with_dotlist(list(overrides))
    except Exception as err:  # noqa: BLE001 - OmegaConf's parse and key errors alike
        raise ConfigError(f"overrides={list(overrides)}: {one_line(err)}") from None
    try:
        return validate(cfg, entry="train")
    except ConfigError as err:
        raise ConfigError(f"overrides={list(overrides)}: {err}") from None
