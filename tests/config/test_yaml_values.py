"""YAML holds what differs from the declarations: a value that merely repeats its declared default
(or what the file it extends already says) is a second place to keep in step, so it fails here.

Group options are read as files: each key of a node is compared with the layer below it, the
files its own defaults list pulls in and then the declaration of the node's `_target_`. Files in
the global package (experiments, debug, launchers, searches) change a composed config, so each of
their values is compared with the config composed without them. The entry configs (train.yaml,
eval.yaml) spell out their top-level keys on purpose: Hydra reads `task_name` when it names the
run dir, before any declaration is consulted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from research.config.paths import config_dir, group_options
from research.config.registry import declaration
from research.config.validate import complete
from research.utils.engine_versions import version_base

_HYDRA_KEYS = {"_target_", "_partial_", "_convert_", "_recursive_", "_args_", "defaults"}
_ABSENT = object()


def _load(path: Path) -> dict[str, Any]:
    body = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    return body if isinstance(body, dict) else {}


def _is_global(path: Path) -> bool:
    return "# @package _global_" in path.read_text()


def _merge(into: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(into)
    for key, value in over.items():
        below = merged.get(key)
        both_dicts = isinstance(value, dict) and isinstance(below, dict)
        merged[key] = _merge(below, value) if both_dicts else value
    return merged


def _extended(path: Path) -> dict[str, Any]:
    """What the files in `path`'s own defaults list compose to (the layer it overrides)."""
    below: dict[str, Any] = {}
    for entry in _load(path).get("defaults") or []:
        if not isinstance(entry, str) or entry == "_self_":
            continue
        name, _, package = entry.partition("@")
        included = path.parent / f"{name}.yaml"
        body = _merge(_extended(included), {k: v for k, v in _load(included).items()})
        body.pop("defaults", None)
        below = _merge(below, {package: body} if package else body)
    return below


def _repeats(node: dict[str, Any], below: dict[str, Any], at: str) -> list[str]:
    target = node.get("_target_", below.get("_target_"))
    schema = declaration(target) if isinstance(target, str) else None
    declared = schema.defaults() if schema is not None else {}
    found = []
    for key, value in node.items():
        if key in _HYDRA_KEYS:
            continue
        base = below.get(key, declared.get(key, _ABSENT))
        if isinstance(value, dict) and key not in declared:
            found += _repeats(value, base if isinstance(base, dict) else {}, f"{at}{key}.")
        elif value == base:
            found.append(f"{at}{key}: {value!r}")
    return found


def _group_files() -> list[Path]:
    skipped = {"hydra", "ablation", "experiment"}
    files = []
    for folder in sorted(p for p in config_dir().iterdir() if p.is_dir()):
        if folder.name not in skipped:
            files += sorted(f for f in folder.rglob("*.yaml") if not _is_global(f))
    return files


@pytest.mark.parametrize("path", _group_files(), ids=lambda p: str(p.relative_to(config_dir())))
def test_a_group_option_holds_no_default(path: Path):
    repeats = _repeats(_load(path), _extended(path), "")
    assert not repeats, (
        f"conf/{path.relative_to(config_dir())} repeats what its declaration (or the file it "
        f"extends) already says; remove: {', '.join(repeats)}"
    )


def _global_options() -> list[tuple[str, str]]:
    return [
        (group, option)
        for group in ("experiment", "debug", "launcher", "hparams_search")
        for option in group_options(group)
    ]


def _leaves(node: Any, at: str = "") -> dict[str, Any]:
    if not isinstance(node, dict) or not node:
        return {at: node}
    found: dict[str, Any] = {}
    for key, value in node.items():
        found.update(_leaves(value, f"{at}.{key}" if at else str(key)))
    return found


def _resolved(overrides: list[str]) -> dict[str, Any]:
    cfg = complete(compose(config_name="train", overrides=overrides, return_hydra_config=True))
    return OmegaConf.to_container(cfg, resolve=False)  # type: ignore[return-value]


@pytest.mark.parametrize("group, option", _global_options())
def test_a_global_option_changes_every_value_it_sets(group: str, option: str):
    """An experiment (or debug, launcher, search) sets a value only where it changes the
    config its own group choices compose."""
    path = config_dir() / group / f"{option}.yaml"
    body = _load(path)
    choices = [
        entry.removeprefix("override /").replace(": ", "=")
        for item in body.get("defaults") or []
        for entry in ([f"{k}: {v}" for k, v in item.items()] if isinstance(item, dict) else [])
        if entry.startswith("override /") and not entry.startswith("override /hydra")
    ]
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        without = _leaves(_resolved(choices))
        with_it = _leaves(_resolved([f"{group}={option}"]))
    own = _leaves({k: v for k, v in body.items() if k != "defaults"})
    repeats = [
        f"{key}: {with_it[key]!r}"
        for key in own
        if key in with_it and key in without and with_it[key] == without[key]
    ]
    assert not repeats, (
        f"conf/{group}/{option}.yaml sets values its config already has; remove: "
        f"{', '.join(repeats)}"
    )
