"""The sampler seed of each trial: the configured seed mixed with the trial's number.

Seeding a sampler once per worker makes parallel workers on one study draw the same stream
(both start from the same seed and trial count), and a resumed study replay its first draws.
The trial number is unique across workers (the storage assigns it in `ask`) and never reused by
a resume, so a sampler built for each trial from (seed, number) draws something new in every
worker, while one worker's search stays reproducible for a given history. The grid sampler is
not reseeded: its seed orders the grid, and every worker must agree on that order.

Optuna is imported lazily: Hydra's plugin scan imports this package on every command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def trial_seed(seed: int, number: int) -> int:
    """The sampler seed of trial `number` in a search seeded with `seed`."""
    import numpy as np

    return int(np.random.SeedSequence([int(seed), int(number)]).generate_state(1)[0])


def per_trial_sampler(build: Callable[[int], Any], seed: int) -> Any:
    """An Optuna sampler that samples each trial with `build(trial_seed(seed, trial.number))`."""
    import optuna

    class PerTrialSampler(optuna.samplers.BaseSampler):
        def __init__(self) -> None:
            # One sampler per live trial: its parameters are drawn from one seeded stream.
            self._samplers: dict[int, Any] = {}

        def _of(self, trial: Any) -> Any:
            if trial.number not in self._samplers:
                self._samplers[trial.number] = build(trial_seed(seed, trial.number))
            return self._samplers[trial.number]

        def before_trial(self, study: Any, trial: Any) -> None:
            self._of(trial).before_trial(study, trial)

        def infer_relative_search_space(self, study: Any, trial: Any) -> Any:
            return self._of(trial).infer_relative_search_space(study, trial)

        def sample_relative(self, study: Any, trial: Any, search_space: Any) -> Any:
            return self._of(trial).sample_relative(study, trial, search_space)

        def sample_independent(
            self, study: Any, trial: Any, param_name: str, param_distribution: Any
        ) -> Any:
            return self._of(trial).sample_independent(study, trial, param_name, param_distribution)

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            self._of(trial).after_trial(study, trial, state, values)
            del self._samplers[trial.number]

    return PerTrialSampler()
