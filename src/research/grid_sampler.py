"""Optuna's grid sampler, for a study driven by ask and tell (the search sweeper).

Optuna's GridSampler calls `Study.stop()` after the trial that completes the grid, which only
works inside `Study.optimize`; under ask and tell it raises RuntimeError from that last `tell`.
The sweeper instead asks `is_exhausted` before each batch and stops there.
"""

from __future__ import annotations

from collections.abc import Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState


class AskTellGridSampler(optuna.samplers.GridSampler):
    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        """Nothing to stop: the sweeper ends the search once `is_exhausted(study)`."""
