"""Optuna's grid sampler, for a study driven by ask and tell (the search sweeper).

Optuna's GridSampler calls `Study.stop()` after the trial that completes the grid, which only
works inside `Study.optimize`; under ask and tell it raises RuntimeError from that last `tell`.
The sweeper instead asks `is_exhausted` before each batch and stops there.

Optuna also counts a grid point as visited once any trial on it has finished, failed included;
a trial that a signal stopped never evaluated its point, so the search retries it. And once every
point has been started, Optuna offers the points still running again; with parallel workers that
runs one point twice at once, so a point running in another worker is never offered: the grid is
done for a worker when every point is finished or running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from research import compat


def ask_tell_grid_sampler(
    search_space: dict[str, Sequence[Any]], seed: int | None, retry_attr: str
) -> Any:
    """A GridSampler for `search_space`; `retry_attr` is a user attribute that marks a failed
    trial whose point was never evaluated (stopped by a signal): such a point is offered again,
    unless another trial has it (finished or running)."""

    def unvisited(sampler: Any, study: Any, left: list[int]) -> list[int]:
        stopped: set[int] = set()
        taken: set[int] = set()
        for trial in study.get_trials(deepcopy=False):
            grid_id, space = compat.optuna_grid_point(trial)
            if grid_id is None or not sampler.same_search_space(space):
                continue
            failed = trial.state.name == "FAIL"
            (stopped if failed and retry_attr in trial.user_attrs else taken).add(grid_id)
        return sorted((set(left) | stopped) - taken)

    return compat.optuna_grid_sampler(unvisited, dict(search_space), seed)
