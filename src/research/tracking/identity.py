"""A run's identity: the hash of what determines its result, plus its seed.

Two runs with the same id are the same experiment; a sweep or ablation uses it to skip work
already done. Keys that only say where or how a run is observed are left out of the hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any

from research.config.moved_keys import at_old_places
from research.config.registry import declaration, hashed_target

# Top-level keys and groups that say where, how or under which name a run is launched, watched or
# resumed, not what it computes: left out of the config hash, and never a reason to split a
# report's variant. `trial` is a search's trial number; its parameters are overrides of their own.
NOT_IDENTITY = frozenset(
    {"seed", "ckpt_path", "paths", "logger", "tags", "task_name", "hydra", "variant", "group"}
    | {"launcher", "trial", "hparams_search"}
)
# Keys inside a group with the same role (a search's pruning callback only reports to its study).
NOT_IDENTITY_NESTED = {
    "trainer": ("enable_progress_bar", "enable_model_summary", "log_every_n_steps"),
    "data": ("data_dir",),
    "callbacks": ("optuna_pruning",),
}


def affects_result(key: str) -> bool:
    """Whether a dotted config key (an override's, e.g. `trainer.log_every_n_steps`) can change
    what a run computes."""
    head, _, rest = key.partition(".")
    head = re.split(r"[/]", head)[0]
    return head not in NOT_IDENTITY and rest not in NOT_IDENTITY_NESTED.get(head, ())


def _without_run_seed(node: Any, seed: Any) -> Any:
    """Drop nested `seed` keys that just repeat the run's seed (e.g. `data.seed: ${seed}`), so
    all seeds of one variant share a config hash."""
    if isinstance(node, dict):
        return {
            k: _without_run_seed(v, seed)
            for k, v in node.items()
            if not (k == "seed" and v == seed)
        }
    if isinstance(node, list):
        return [_without_run_seed(v, seed) for v in node]
    return node


def _without_cluster(plugins: Any) -> Any:
    """Trainer plugins minus cluster environments (e.g. `launcher=submitit_slurm`'s
    SLURMEnvironment): where a run executes is not part of what it computes."""
    if not isinstance(plugins, list):
        return plugins
    kept = [
        p
        for p in plugins
        if not (isinstance(p, dict) and str(p.get("_target_", "")).endswith("Environment"))
    ]
    return kept or None


def flatten(node: Any, at: str = "") -> dict[str, Any]:
    """{'optimizer.lr': 0.1, ...}: the leaves of nested dicts under dotted keys."""
    if not isinstance(node, dict):
        return {at: node}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(flatten(value, f"{at}.{key}" if at else str(key)))
    return flat


def _as_recorded(node: Any) -> Any:
    """`node` as run ids have always hashed it: targets under the name they were first recorded
    with, and fields declared `id_if_changed` left out while they hold their default (they
    joined their declaration after runs existed, with a default that keeps those runs' result)."""
    if isinstance(node, list):
        return [_as_recorded(v) for v in node]
    if not isinstance(node, dict):
        return node
    target = node.get("_target_")
    schema = declaration(target) if isinstance(target, str) else None
    quiet = {}
    if schema is not None:
        defaults = schema.defaults()
        quiet = {
            f.name: defaults.get(f.name)
            for f in dataclasses.fields(schema)  # type: ignore[arg-type]
            if f.metadata.get("id_if_changed")
        }
    kept = {}
    for key, value in node.items():
        if key in quiet and value == quiet[key]:
            continue
        kept[key] = hashed_target(value) if key == "_target_" and isinstance(value, str) else value
        kept[key] = _as_recorded(kept[key])
    return kept


def identity_content(resolved: dict[str, Any]) -> dict[str, Any]:
    """The part of a resolved config that determines a run's result: minus bookkeeping keys
    and the run seed. Two runs with equal content are the same experiment."""
    content = {
        k: _as_recorded(_without_run_seed(v, resolved.get("seed")))
        for k, v in resolved.items()
        if k not in NOT_IDENTITY
    }
    for group, keys in NOT_IDENTITY_NESTED.items():
        if isinstance(content.get(group), dict):
            content[group] = {k: v for k, v in content[group].items() if k not in keys}
    if isinstance(content.get("trainer"), dict):
        trainer = dict(content["trainer"])
        trainer.pop("_convert_", None)  # how Hydra hands Lightning the plugins (SLURM's)
        plugins = _without_cluster(trainer.pop("plugins", None))
        content["trainer"] = {**trainer, **({"plugins": plugins} if plugins else {})}
    at_old_places(content)  # a moved key hashes where ids first hashed it
    return content


def config_hash(resolved: dict[str, Any]) -> str:
    """12 hex digits over the resolved config minus bookkeeping keys and the run seed."""
    text = json.dumps(identity_content(resolved), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def run_id(resolved: dict[str, Any]) -> str:
    """`<config hash>-s<seed>`; an evaluation, which has no seed of its own (it re-tests a run
    with that run's), is its hash alone."""
    seed = resolved.get("seed")
    return config_hash(resolved) if seed is None else f"{config_hash(resolved)}-s{seed}"
