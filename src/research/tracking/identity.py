"""A run's identity: the hash of what determines its result, plus its seed.

Two runs with the same id are the same experiment; a sweep or ablation uses it to skip work
already done. Keys that only say where or how a run is observed are left out of the hash.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# Top-level keys that do not change what is computed.
_NOT_IDENTITY = (
    "seed",
    "ckpt_path",
    "paths",
    "logger",
    "tags",
    "task_name",
    "hydra",
    "variant",
    "group",
)
_TRAINER_DISPLAY = ("enable_progress_bar", "enable_model_summary", "log_every_n_steps")


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


def config_hash(resolved: dict[str, Any]) -> str:
    """12 hex digits over the resolved config minus bookkeeping keys and the run seed."""
    content = {
        k: _without_run_seed(v, resolved.get("seed"))
        for k, v in resolved.items()
        if k not in _NOT_IDENTITY
    }
    if isinstance(content.get("trainer"), dict):
        content["trainer"] = {
            k: v for k, v in content["trainer"].items() if k not in _TRAINER_DISPLAY
        }
    if isinstance(content.get("data"), dict):
        content["data"] = {k: v for k, v in content["data"].items() if k != "data_dir"}
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def run_id(resolved: dict[str, Any]) -> str:
    return f"{config_hash(resolved)}-s{resolved.get('seed')}"
