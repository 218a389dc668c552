"""What a search optimizes: one direction (the job's return value, its best checkpoint's monitored
metric, unless `objectives` names another), or several (`direction: [maximize, minimize]`), each
a metric that `objectives` names and each trial's metrics.json holds; and the Pareto front
such a search ends with.

Hydra's Optuna plugin takes a multi-objective value from the task function's return value (a
list); `research-train` returns one number, so the objectives are named in config and read from
the run's record instead: `val/acc` or `best.val/acc` is the best checkpoint's value (tested
metrics included), `final.val/loss` the last epoch's.
"""

from __future__ import annotations

import math
from typing import Any

from research.config.errors import ConfigError

DIRECTIONS = ("maximize", "minimize")
SECTIONS = ("best", "final")


def directions_of(direction: Any) -> list[str]:
    """`hydra.sweeper.direction` (one or a list) as a list of names."""
    if isinstance(direction, str) or direction is None:
        return [str(direction)]
    return [str(d) for d in direction]


def objectives_of(objectives: Any) -> list[str] | None:
    """`hydra.sweeper.objectives` (null, one metric or a list) as a list of names, or None."""
    if objectives is None:
        return None
    if isinstance(objectives, str):
        return [objectives]
    return [str(o) for o in objectives]


def check_objectives(
    directions: list[str], objectives: list[str] | None, pruner: dict[str, Any], sampler: str
) -> None:
    """Refuse in one line what a search with these directions and objectives cannot run."""
    shown = directions[0] if len(directions) == 1 else f"[{', '.join(directions)}]"
    if not directions or any(d not in DIRECTIONS for d in directions):
        raise ConfigError(
            f"hydra.sweeper.direction={shown}: choose maximize or minimize, or a list of them "
            "for several objectives (by default the checkpoint's mode decides: max -> maximize)"
        )
    if objectives is None:
        if len(directions) > 1:
            raise ConfigError(
                f"hydra.sweeper.direction={shown} optimizes {len(directions)} objectives: name "
                f"their metrics in the same order with hydra.sweeper.objectives=[...], e.g. "
                "[val/acc,val/loss] (each read from the trial's metrics.json)"
            )
        return
    if len(objectives) != len(directions):
        raise ConfigError(
            f"hydra.sweeper.objectives=[{', '.join(objectives)}] names {len(objectives)} "
            f"metrics for {len(directions)} directions ({shown}); give one metric per direction"
        )
    for name in objectives:
        section, metric = split_objective(name)
        if not metric or not metric.strip():
            raise ConfigError(
                f"hydra.sweeper.objectives: {name!r} names no metric; give names as metrics.json "
                "has them: val/acc (the best checkpoint's), best.val/acc or final.val/loss"
            )
    if len(directions) > 1 and str(pruner.get("name", "none")) != "none":
        raise ConfigError(
            f"hydra.sweeper.pruner.name={pruner.get('name')}: Optuna prunes single-objective "
            "studies only; set hydra.sweeper.pruner.name=none for several objectives"
        )
    if len(directions) > 1 and sampler == "cmaes":
        raise ConfigError(
            "hydra.sweeper.sampler.name=cmaes optimizes one objective only; use tpe, random or "
            "grid for several objectives"
        )


def split_objective(name: str) -> tuple[str, str]:
    """(`best` or `final`, metric) of an objective's name; a bare metric is the best's."""
    head, _, rest = name.partition(".")
    return (head, rest) if head in SECTIONS else ("best", name)


def objective_values(
    record: dict[str, Any], objectives: list[str]
) -> tuple[list[float] | None, str | None]:
    """The objectives' values in a run's metrics.json, or None and what is missing (with the
    metrics it does have)."""
    values = []
    for name in objectives:
        section, metric = split_objective(name)
        found = (record.get(section) or {}).get(metric)
        if isinstance(found, bool) or not isinstance(found, (int, float)) or math.isnan(found):
            have = ", ".join(sorted(record.get(section) or {})) or "none"
            return None, f"no {metric} among its {section} metrics (it has: {have})"
        values.append(float(found))
    return values, None


def pareto_lines(solutions: list[dict[str, Any]], names: list[str]) -> str:
    """The Pareto front as printed at the end of a search: one line per trial."""
    lines = []
    for solution in solutions:
        values = ", ".join(f"{n}={v:.6g}" for n, v in zip(names, solution["values"], strict=True))
        params = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in solution["params"].items()
        )
        lines.append(
            f"  trial {solution['trial']}: {values} ({params}); run dir: {solution['run_dir']}; "
            f"W&B run id: {solution['wandb_run_id']}"
        )
    return "\n".join(lines)


def objective_names(objectives: list[str] | None, directions: list[str]) -> list[str]:
    """How the objectives are named in messages: by config, else `value`."""
    if objectives:
        return objectives
    return ["value"] * len(directions)
