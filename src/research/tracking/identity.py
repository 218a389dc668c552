"""A run's identity: the hash of what determines its result, plus its seed.

Two runs with the same id are the same experiment; a sweep or ablation uses it to skip work
already done. Keys that only say where or how a run is observed are left out of the hash.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# Top-level keys that do not change what is computed.
_NOT_IDENTITY = ("seed", "ckpt_path", "paths", "logger", "tags", "task_name", "hydra", "variant")
_TRAINER_DISPLAY = ("enable_progress_bar", "enable_model_summary", "log_every_n_steps")


def config_hash(resolved: dict[str, Any]) -> str:
    """12 hex digits over the resolved config minus bookkeeping keys."""
    content = {k: v for k, v in resolved.items() if k not in _NOT_IDENTITY}
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
