"""The one place a run's config becomes its datamodule and task: training and evaluation share it,
so a config that trains is exactly a config that evaluates."""

from __future__ import annotations

from typing import Any

from research.config.instantiate import instantiate_plain


def _scheduler(node: dict[str, Any] | None) -> Any:
    """The scheduler partial, or None for `scheduler=none` (its `_target_` is null)."""
    return instantiate_plain(node) if node and node.get("_target_") else None


def build_task(config: dict[str, Any]) -> tuple[Any, Any]:
    """(datamodule, task) from a resolved config's `data`, `model`, `loss`, `optimizer` and
    `scheduler` groups."""
    datamodule = instantiate_plain(config["data"])
    task = instantiate_plain(
        config["model"],
        loss=instantiate_plain(config["loss"]),
        optimizer=instantiate_plain(config["optimizer"]),
        scheduler=_scheduler(config.get("scheduler")),
    )
    return datamodule, task
