"""Which metrics a report shows, and which way each one is better.

A direction comes from, in order: the user's explicit choice, the runs' own checkpoint mode for
the monitored metric, then the metric's name (`acc`, `ndcg`, `mfu`, rates `*_per_s` ... higher;
`loss`, `ppl`, `bpb` (bits per byte), ... lower). A metric none of these decide gets no bold
cell rather than a guessed one.

The names (`research.utils.metric_names`) that make a metric better higher, rates aside, name
shares: their mean lies in [0, 1], so the part of an interval beyond holds no value it can take.
"""

from __future__ import annotations

import pandas as pd

from research.reports.errors import ReportError
from research.utils.metric_names import direction_by_name, named_as_share

DIRECTIONS = ("max", "min")
_PARTS = ("final.", "best.")


def available_metrics(runs: pd.DataFrame) -> list[str]:
    """The numeric `final.*` and `best.*` columns, sorted."""
    return sorted(c for c in runs.columns if c.startswith(_PARTS))


def resolve_metric(runs: pd.DataFrame, name: str) -> str:
    """A column of `runs`; a bare `test/acc` means `final.test/acc`."""
    available = available_metrics(runs)
    for candidate in (name, f"final.{name}"):
        if candidate in available:
            return candidate
    raise ReportError(f"unknown metric {name!r}; available: {', '.join(available) or 'none'}")


def default_metrics(runs: pd.DataFrame) -> list[str]:
    """Every `final.test/*` metric plus `best.<monitor>` of the runs' checkpoint monitor;
    every `final.val/*` metric when the runs were neither tested nor checkpointed."""
    available = available_metrics(runs)
    tests = [c for c in available if c.startswith("final.test/")]
    monitors = runs["monitor"].dropna().value_counts().index
    monitored = [f"best.{m}" for m in monitors if f"best.{m}" in available]
    return tests + monitored or [c for c in available if c.startswith("final.val/")]


def is_share(metric: str, values: pd.Series) -> bool:
    """Whether `metric` is a share by its name and every recorded value lies in [0, 1]; a value
    beyond says it is kept in other units (percent)."""
    return named_as_share(metric) and bool(values.dropna().between(0, 1).all())


def _monitor_modes(runs: pd.DataFrame) -> dict[str, str]:
    """The checkpoint mode the runs recorded for their monitored metric (the most common one)."""
    modes: dict[str, str] = {}
    recorded = runs[["monitor", "mode"]].dropna()
    for monitor, group in recorded.groupby("monitor"):
        mode = str(group["mode"].mode().iloc[0])
        if mode in DIRECTIONS:
            modes.update({f"{part}{monitor}": mode for part in _PARTS})
    return modes


def directions(
    runs: pd.DataFrame, metrics: list[str], chosen: dict[str, str] | None = None
) -> dict[str, str | None]:
    """The direction of each metric; `chosen` (metric -> 'max'/'min') overrides the rest."""
    explicit = {}
    for name, way in (chosen or {}).items():
        metric = resolve_metric(runs, name)
        if metric not in metrics:
            raise ReportError(
                f"direction given for {metric!r}, which is not in the table; "
                f"table metrics: {', '.join(metrics)}"
            )
        if way not in DIRECTIONS:
            raise ReportError(f"direction {way!r} for {metric!r} is not valid; choose max or min")
        explicit[metric] = way
    modes = _monitor_modes(runs)
    return {m: explicit.get(m) or modes.get(m) or direction_by_name(m) for m in metrics}
