"""Optuna's grid sampler, for a study driven by ask and tell (the search sweeper).

Optuna's GridSampler calls `Study.stop()` after the trial that completes the grid, which only
works inside `Study.optimize`; under ask and tell it raises RuntimeError from that last `tell`.
The sweeper instead asks `is_exhausted` before each batch and stops there.

Optuna also counts a grid point as visited once any trial on it has finished, failed included;
a trial that a signal stopped never evaluated its point, so the search retries it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState


class AskTellGridSampler(optuna.samplers.GridSampler):
    def __init__(
        self,
        search_space: dict[str, Sequence[Any]],
        seed: int | None = None,
        *,
        retry_attr: str,
    ) -> None:
        """`retry_attr`: a user attribute that marks a failed trial whose point was never
        evaluated (stopped by a signal); such a point is offered again."""
        super().__init__(search_space, seed=seed)
        self._retry_attr = retry_attr

    def _get_unvisited_grid_ids(self, study: optuna.Study) -> list[int]:
        unvisited = set(super()._get_unvisited_grid_ids(study))
        stopped: set[int] = set()
        tried: set[int] = set()
        for trial in study.get_trials(deepcopy=False):
            grid_id = trial.system_attrs.get("grid_id")
            if grid_id is None or not self._same_search_space(trial.system_attrs["search_space"]):
                continue
            if trial.state == TrialState.FAIL and self._retry_attr in trial.user_attrs:
                stopped.add(grid_id)
            else:
                tried.add(grid_id)
        return sorted(unvisited | (stopped - tried))

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        """Nothing to stop: the sweeper ends the search once `is_exhausted(study)`."""
