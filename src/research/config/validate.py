"""Complete a composed config from the declarations and check it: the single gate before anything
heavy runs.

YAML files hold what differs from a declaration; `complete` fills in every declared field a node
leaves out, so a run's saved config, `--cfg job` and W&B show every value the run used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import InterpolationKeyError, OmegaConfBaseException

from research.config.devices import check_devices, check_strategy
from research.config.errors import ConfigError, one_line
from research.config.names import check_config_names
from research.config.pairing import check_pairing, missing_key
from research.config.registry import declaration
from research.config.schema import check_node, walk_targets


def _target(node: DictConfig) -> str | None:
    try:
        target = node.get("_target_")
    except OmegaConfBaseException:
        return None
    return target if isinstance(target, str) else None


def children(node: DictConfig) -> list[tuple[Any, Any]]:
    """`node`'s (key, child) pairs, nothing resolved: a sub-node as itself (so a change reaches
    `node`), a value as written (an interpolation as its `${...}` string); none below a null or
    missing node. OmegaConf's public `items_ex(resolve=False)`, which raises for those two."""
    return node.items_ex(resolve=False) if len(node) else []


def _list_items(node: ListConfig) -> Iterator[Any]:
    """The items of `node` that are neither interpolations nor missing, sub-nodes as
    themselves."""
    for index in range(len(node)):
        if not OmegaConf.is_interpolation(node, index) and not OmegaConf.is_missing(node, index):
            yield node[index]


def fill_declared(node: DictConfig, below: Mapping[str, Any] | None = None) -> None:
    """Add to `node` (in place) each field its target declares that neither `node` nor the layer
    `below` it holds, at the declared default; then do the same in its sub-nodes. `below` is
    what the config files under this one already give this node (its target may come from
    there)."""
    below = below or {}
    target = _target(node) or below.get("_target_")
    schema = declaration(target) if isinstance(target, str) else None
    declared = schema.defaults() if schema is not None else {}
    missing = {k: v for k, v in declared.items() if k not in node and k not in below}
    if missing:
        with open_dict(node):
            for key, value in missing.items():
                node[key] = value
            _in_declared_order(node, list(declared))
    for key, child in children(node):
        if key in declared or key == "hydra":
            continue
        if isinstance(child, DictConfig):
            under = below.get(key)
            fill_declared(child, under if isinstance(under, Mapping) else None)
        elif isinstance(child, ListConfig):
            for item in _list_items(child):
                if isinstance(item, DictConfig):
                    fill_declared(item)


def _in_declared_order(node: DictConfig, fields: list[str]) -> None:
    """Reorder `node` as a reader expects: Hydra's keys, the declared fields in declaration
    order, then sub-nodes (e.g. `net`). Values move as written, interpolations unresolved."""
    moved = {str(k): child for k, child in children(node)}
    keys = list(moved)
    order = [k for k in keys if k.startswith("_")]
    order += [k for k in fields if k in keys]
    order += [k for k in keys if k not in order]
    for key in order:
        del node[key]
        node[key] = moved[key]


def complete(cfg: DictConfig) -> DictConfig:
    """A copy of `cfg` in which every node with a `_target_` holds all of its declared fields
    (the ones the YAML leaves out at their declared defaults). Interpolations stay unresolved.

    Configs composed from conf/ are complete already (research's Hydra config source fills them
    in as it reads each file); this completes a saved config of a run from before that."""
    completed = cfg.copy()
    fill_declared(completed)
    return completed


def _completed_task(cfg: DictConfig) -> DictConfig:
    """`complete(cfg)` without Hydra's own node: no task value reads it, and copying it (its
    logging and help configs) along with the task was wasted work on every validation."""
    task = OmegaConf.create({k: child for k, child in children(cfg) if k != "hydra"})
    fill_declared(task)
    return task


def unresolved(cfg: DictConfig) -> dict[str, Any]:
    """The completed config as plain containers, interpolations kept (Hydra's own node
    dropped)."""
    plain = OmegaConf.to_container(_completed_task(cfg), resolve=False)
    assert isinstance(plain, dict)
    return plain  # type: ignore[return-value]


def resolve(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    """The completed config as plain containers with interpolations resolved (Hydra's own node
    dropped); `cfg` may be what `unresolved` returned."""
    return _resolved(OmegaConf.create(cfg) if isinstance(cfg, dict) else _completed_task(cfg))


def _resolved(task: DictConfig, plain: dict[str, Any] | None = None) -> dict[str, Any]:
    """`task` with its interpolations resolved; a missing key is named with the keys near it
    (`plain`: `task` unresolved, where the caller has it)."""
    try:
        resolved = OmegaConf.to_container(task, resolve=True, throw_on_missing=True)
    except InterpolationKeyError as err:
        reader = str(err.full_key or "a key")
        if plain is None:
            plain = OmegaConf.to_container(task, resolve=False)  # type: ignore[assignment]
        raise ConfigError(missing_key(str(err), reader, plain) or one_line(err)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(one_line(err)) from None
    assert isinstance(resolved, dict)
    return resolved  # type: ignore[return-value]


def undeclared(resolved: dict[str, Any]) -> list[str]:
    """`<path>._target_=<target>` of every node that no declaration checks (its values reach
    the component unchecked)."""
    return [
        f"{at}._target_={node['_target_']}"
        for at, node in walk_targets(resolved)
        if declaration(str(node["_target_"])) is None
    ]


def _check_required(cfg: DictConfig, required: tuple[str, ...], entry: str) -> None:
    """Hydra lets `~model` (or `~seed`) remove what every run builds from or reads; the run
    would fail only after its run dir was made."""
    for key in required:
        if OmegaConf.select(cfg, key, default=None) is None:
            how = (
                f"set it with {key}=<value>"
                if "." in key
                else f"choose another with {key}=... instead (research-{entry} --help lists the "
                "config groups and their options)"
            )
            raise ConfigError(
                f"{key} is missing (removed with ~{key}?): every research-{entry} run needs "
                f"it; {how}"
            )


def validate(cfg: DictConfig, entry: str = "train") -> dict[str, Any]:
    """Validate `cfg` and return it completed and resolved; the first problem raises a one-line
    ConfigError.

    The entry config's own keys (seed, ckpt_path, ...) are checked against its run declaration;
    every other node with a `_target_`, in whatever group or depth, against the declaration of
    that target, so a new config group is checked without being listed anywhere.
    """
    check_config_names(cfg)
    run_schema = declaration(f"@{entry}")
    assert run_schema is not None
    _check_required(cfg, run_schema.required, entry)
    task = _completed_task(cfg)
    plain = OmegaConf.to_container(task, resolve=False)
    assert isinstance(plain, dict)
    check_pairing(plain)  # type: ignore[arg-type]
    resolved = _resolved(task, plain)  # type: ignore[arg-type]
    run_fields = run_schema.__dataclass_fields__
    check_node("", {k: v for k, v in resolved.items() if k in run_fields}, run_schema)
    checked = []
    for at, node in walk_targets({k: v for k, v in resolved.items() if k not in run_fields}):
        target = str(node["_target_"])
        schema = declaration(target)
        if schema is not None:
            checked.append((at, target, check_node(at, node, schema)))
    for at, target, instance in checked:
        instance.check_run(at, target, resolved)
    check_devices(resolved.get("trainer") or {})
    check_strategy(resolved.get("trainer") or {})
    return resolved
