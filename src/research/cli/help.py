"""What `--help` prints: the usage with every config group, and for `--help <node>` the fields the
node's declaration has (name, type, default, valid values, its value here, one line of doc)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research.config.compose import compose_all
from research.config.describe import class_doc, describe
from research.config.errors import ConfigError
from research.config.moved_keys import MOVED_KEYS
from research.config.paths import config_dir, group_options
from research.config.registry import declaration
from research.config.validate import complete

_USAGE = """{prog}: {what}

usage: {prog} [group=option ...] [key=value ...] [-m] [--cfg job] [--help [NODE]]

examples:
{examples}

config groups (conf/<group>/<option>.yaml):
{groups}

`--help NODE` lists a node's fields with their types, defaults and valid values (e.g.
`--help model.net`, `model=transformer_cls --help model.net`); `--cfg job` prints the composed
config with every value; `-m` sweeps comma-separated values (a multirun). Mistakes in any job's
config are reported before anything runs.
"""
_ABOUT = {
    "train": (
        "train a model composed from conf/ (Hydra + Lightning + W&B offline)",
        [
            "research-train optimizer=sgd optimizer.lr=0.05 seed=3",
            "research-train -m optimizer.lr=1e-3,3e-3 seed=0,1,2",
            "research-train ckpt_path=last   # resume this config's unfinished run",
            "research-train --help optimizer",
        ],
    ),
    "eval": (
        "re-evaluate a finished run's checkpoint with that run's own saved config",
        [
            "research-eval run_dir=logs/train/runs/<run>",
            "research-eval run_dir=logs/train/runs/<run> ckpt=last split=val",
        ],
    ),
}
_HIDDEN_GROUPS = ("hydra", "paths")


def usage(prog: str, config_name: str) -> str:
    """Our own --help: Hydra's lists every group option by composing each one (about 1 s)."""
    what, examples = _ABOUT[config_name]
    groups = [
        f"  {folder.name:15s} {', '.join(group_options(folder.name))}"
        + ("  (files for research-ablate NAME)" if folder.name == "ablation" else "")
        for folder in sorted(config_dir().iterdir())
        if folder.is_dir() and folder.name not in _HIDDEN_GROUPS and group_options(folder.name)
    ]
    return _USAGE.format(
        prog=prog,
        what=what,
        examples="\n".join(f"  {e}" for e in examples),
        groups="\n".join(groups) if config_name == "train" else "  (none: see run_dir, ckpt)",
    )


def _shown(value: Any) -> str:
    text = "null" if value is None else str(value)
    return text if len(text) <= 28 else text[:25] + "..."


def _value(cfg: DictConfig, path: str) -> Any:
    """The resolved value at `path`, or its unresolved text when it cannot be resolved here."""
    try:
        node = OmegaConf.select(cfg, path, throw_on_missing=True)
    except OmegaConfBaseException:
        node = OmegaConf.select(cfg, path, throw_on_resolution_failure=False)
    if isinstance(node, DictConfig | type(OmegaConf.create([]))):
        return OmegaConf.to_container(node, resolve=False)
    return node


def _fields_table(cfg: DictConfig, path: str, target: str, only: str | None = None) -> list[str]:
    """The declared fields of the node at `path` (just `only`, when given) as aligned rows."""
    schema = declaration(target)
    if schema is None:
        return [f"{path}: {target} has no declaration, so its fields are not known here"]
    infos = [info for info in describe(schema) if only is None or info.name == only]
    rows = [("field", "type", "default", "valid", "here", "")]
    for info in infos:
        here = _value(cfg, f"{path}.{info.name}" if path else info.name)
        valid = info.rules or "-"
        rows.append((info.name, info.type, _shown(info.default), valid, _shown(here), info.doc))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [
        f"{path or 'the run'}: {target} (declared by {schema.__module__}.{schema.__name__})",
        *([f"  {class_doc(schema)}"] if class_doc(schema) else []),
        "",
    ]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)]
        lines.append(("  " + "  ".join(cells) + ("  " + row[5] if row[5] else "")).rstrip())
    return lines


def _node_lines(cfg: DictConfig, path: str, entry: str) -> list[str]:
    if not path or path in ("run", "."):
        return _fields_table(cfg, "", f"@{entry}")
    node = OmegaConf.select(cfg, path, throw_on_resolution_failure=False)
    if node is None and OmegaConf.select(cfg, path, default="<absent>") == "<absent>":
        if path in MOVED_KEYS:
            raise ConfigError(
                f"--help {path}: it moved to {MOVED_KEYS[path]}; --help {MOVED_KEYS[path]} "
                "describes it"
            )
        parent = path.rpartition(".")[0]
        while parent and not isinstance(OmegaConf.select(cfg, parent), DictConfig):
            parent = parent.rpartition(".")[0]
        above = OmegaConf.select(cfg, parent) if parent else cfg
        known = sorted(str(k) for k in above if str(k) != "hydra")
        raise ConfigError(
            f"--help {path}: no such node; {parent or 'the config'} has: {', '.join(known)}"
        )
    if isinstance(node, DictConfig) and node.get("_target_"):
        return _fields_table(cfg, path, str(node.get("_target_")))
    if isinstance(node, DictConfig):
        parts = [
            f"  {key}: {node[key].get('_target_')}" if isinstance(node[key], DictConfig) else ""
            for key in node
        ]
        return [
            f"{path} has no _target_; its parts (--help {path}.<part> for one):",
            *[p for p in parts if p],
        ]
    parent, _, name = path.rpartition(".")
    owner = OmegaConf.select(cfg, parent) if parent else None
    target = owner.get("_target_") if isinstance(owner, DictConfig) else f"@{entry}"
    if not target:
        return [f"{path} = {_shown(_value(cfg, path))}"]
    return _fields_table(cfg, parent, str(target), only=name)


def node_help(config_name: str, overrides: Sequence[str], nodes: Sequence[str]) -> str:
    """The fields of each of `nodes` in the config `overrides` compose."""
    (cfg,) = compose_all(config_name, overrides, single=True)
    completed = complete(cfg)
    return "\n\n".join("\n".join(_node_lines(completed, n, config_name)) for n in nodes)
