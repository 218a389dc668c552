"""Check a composed config against the typed schemas; the single gate before anything heavy runs."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research.config import schemas  # noqa: F401  (registers the schemas)
from research.config.devices import check_devices, check_strategy
from research.config.errors import ConfigError, one_line
from research.config.schema import SCHEMAS, check_node, walk_targets
from research.optim.configs import check_horizon


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain containers with interpolations resolved (Hydra's own node dropped)."""
    plain = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(plain, dict)
    plain.pop("hydra", None)
    try:
        resolved = OmegaConf.to_container(
            OmegaConf.create(plain), resolve=True, throw_on_missing=True
        )
    except OmegaConfBaseException as err:
        raise ConfigError(one_line(err)) from None
    assert isinstance(resolved, dict)
    return resolved  # type: ignore[return-value]


def validate(cfg: DictConfig, entry: str = "train") -> dict[str, Any]:
    """Validate `cfg` and return it resolved; the first problem raises a one-line ConfigError.

    The entry config's own keys (seed, ckpt_path, ...) are checked against its run schema;
    every other node with a `_target_`, in whatever group or depth, against the declaration of
    that target, so a new config group is checked without being listed anywhere.
    """
    resolved = resolve(cfg)
    run_schema = SCHEMAS[f"@{entry}"]
    run_fields = run_schema.__dataclass_fields__
    check_node("", {k: v for k, v in resolved.items() if k in run_fields}, run_schema)
    for at, node in walk_targets({k: v for k, v in resolved.items() if k not in run_fields}):
        schema = SCHEMAS.get(str(node["_target_"]))
        if schema is not None:
            check_node(at, node, schema)
    check_devices(resolved.get("trainer") or {})
    check_strategy(resolved.get("trainer") or {})
    problem = check_horizon(resolved)
    if problem:
        raise ConfigError(problem)
    return resolved
