"""What a report needs of each field of a run's metrics.json, checked before the run becomes a row.

metrics.json is a file on disk: copied, hand-edited, written by an older version or cut short. A
value the report cannot use (an inf or NaN metric, a seed beyond 64 bits or not an integer, a
run id that is not text, a completed run without its config) would otherwise crash the whole
report or silently skew a mean. Each such value is left out of that run's row, and the run is
flagged with one RunsWarning naming its dir and everything that was wrong; the other runs are
reported as usual.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

from research.reports.errors import RunsWarning

_SEED_RANGE = (-(2**63), 2**63 - 1)  # what the table's integer seed column holds
_TEXT = ("run_id", "config_hash", "variant", "monitor", "mode", "error")  # grouped or hashed
_METRICS = ("final", "best")
_WANDB = ("project", "group", "mode", "run_id")


def finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number (not a bool); else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float's range
        return None
    return number if math.isfinite(number) else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _seed(metrics: dict[str, Any], problems: list[str]) -> None:
    seed = metrics.get("seed")
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        problems.append(f"seed {_short(seed)} is not an integer")
    elif not _SEED_RANGE[0] <= seed <= _SEED_RANGE[1]:
        problems.append(f"seed {_short(seed)} is outside the 64-bit integer range")
    else:
        return
    metrics["seed"] = None


def _texts(metrics: dict[str, Any], problems: list[str]) -> None:
    for key in _TEXT:
        value = metrics.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"{key} {_short(value)} is not a string")
            metrics[key] = None
    overrides = metrics.get("overrides")
    if overrides is not None and not (
        isinstance(overrides, list) and all(isinstance(o, str) for o in overrides)
    ):
        problems.append("overrides is not a list of strings")
        metrics["overrides"] = []
    wandb = metrics.get("wandb")
    if wandb is not None and not isinstance(wandb, dict):
        problems.append("wandb is not a mapping")
        metrics["wandb"] = {}
    elif wandb:
        bad = [k for k in _WANDB if wandb.get(k) is not None and not isinstance(wandb[k], str)]
        if bad:
            problems.append(f"wandb {', '.join(bad)}: not a string")
            metrics["wandb"] = {k: v for k, v in wandb.items() if k not in bad}


def _numbers(metrics: dict[str, Any], problems: list[str]) -> None:
    for part in _METRICS:
        values = metrics.get(part)
        if values is None:
            continue
        if not isinstance(values, dict):
            problems.append(f"{part} is not a mapping of metrics")
            metrics[part] = {}
            continue
        # Strings (e.g. best.checkpoint, a path) are not metrics and are left out as always.
        bad = {
            name: value
            for name, value in values.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            if finite(value) is None
        }
        if bad:
            shown = ", ".join(f"{part}.{name} = {_short(v)}" for name, v in bad.items())
            problems.append(f"{shown}: not a finite number")
            metrics[part] = {k: v for k, v in values.items() if k not in bad}
    wall = metrics.get("wall_time_s")
    if wall is not None and finite(wall) is None:
        problems.append(f"wall_time_s {_short(wall)} is not a finite number")
        metrics["wall_time_s"] = None


def checked(run_dir: Path, metrics: dict[str, Any]) -> dict[str, Any]:
    """`metrics` with every value the report cannot use left out; warns once for `run_dir`
    when anything was, naming each problem."""
    metrics, problems = dict(metrics), []
    _seed(metrics, problems)
    _texts(metrics, problems)
    _numbers(metrics, problems)
    if metrics.get("status") == "completed" and not isinstance(metrics.get("config"), dict):
        problems.append("no config (it cannot be checked against its variant's other runs)")
    if problems:
        warnings.warn(
            f"{run_dir}: flagged: {'; '.join(problems)}; those values are left out, the rest "
            "of the run is reported",
            RunsWarning,
            stacklevel=3,
        )
    return metrics
