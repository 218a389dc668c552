"""A Hydra sweeper that lets Optuna (>= 3) choose each trial's overrides.

hydra-optuna-sweeper 1.3 pins optuna < 3, and with optuna 2.10 and SQLAlchemy 2 its database
storage fails, so an interrupted search could not resume. This sweeper asks a current Optuna
for `n_jobs` trials at a time, hands them to the configured Hydra launcher (basic, submitit),
and tells Optuna each job's return value: the best checkpoint's monitored metric, as returned by
`research-train`. With a storage URL the study lives in a database; re-running the same command
continues it up to `n_trials` finished trials (trials left running by a crash are marked failed).

Search spaces use Hydra's sweep syntax: `choice(a, b)`, `range(1, 8)`, `interval(0.0, 0.5)`,
`tag(log, interval(1e-4, 1e-1))`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep
from omegaconf import OmegaConf

from hydra_plugins.research_sweeper.base import LaunchingSweeper


def _suggest(trial: Any, name: str, spec: str) -> Any:
    """One override value from a Hydra sweep expression."""
    override = OverridesParser.create().parse_override(f"{name}={spec}")
    sweep = override.value()
    if isinstance(sweep, ChoiceSweep):
        return trial.suggest_categorical(name, list(sweep.list))
    if isinstance(sweep, RangeSweep):
        return trial.suggest_int(name, int(sweep.start), int(sweep.stop) - 1, step=int(sweep.step))
    if isinstance(sweep, IntervalSweep):
        log = "log" in sweep.tags
        if isinstance(sweep.start, int) and isinstance(sweep.end, int):
            return trial.suggest_int(name, sweep.start, sweep.end, log=log)
        return trial.suggest_float(name, float(sweep.start), float(sweep.end), log=log)
    raise ValueError(
        f"hparams_search param {name}={spec} is not a search space; use choice(...), "
        "range(...), interval(...) or tag(log, interval(...))"
    )


class OptunaStudySweeper(LaunchingSweeper):
    def __init__(
        self,
        study_name: str,
        storage: str | None,
        direction: str,
        n_trials: int,
        n_jobs: int = 1,
        seed: int | None = None,
        params: dict[str, str] | None = None,
    ) -> None:
        self.study_name, self.storage, self.direction = study_name, storage, direction
        self.n_trials, self.n_jobs, self.seed = n_trials, n_jobs, seed
        self.params = dict(params or {})

    def _study(self) -> Any:
        import optuna

        if self.storage and self.storage.startswith("sqlite:///"):
            Path(self.storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        study = optuna.create_study(
            study_name=self.study_name,
            storage=self.storage,
            direction=self.direction,
            sampler=optuna.samplers.TPESampler(seed=self.seed),
            load_if_exists=True,
        )
        for stale in study.get_trials(states=(optuna.trial.TrialState.RUNNING,)):
            study.tell(stale.number, state=optuna.trial.TrialState.FAIL)
        return study

    def sweep(self, arguments: list[str]) -> Any:
        import optuna

        assert self.launcher is not None
        sweep_dir = self.prepare_sweep_dir()
        study = self._study()
        finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
        job_index = 0
        while (done := len(study.get_trials(states=finished))) < self.n_trials:
            trials = [study.ask() for _ in range(min(self.n_jobs, self.n_trials - done))]
            batch = [
                [*arguments, *(f"{k}={_suggest(t, k, v)}" for k, v in self.params.items())]
                for t in trials
            ]
            self.validate_batch_is_legal(batch)
            returns = self.launcher.launch(batch, initial_job_idx=job_index)
            job_index += len(batch)
            for trial, job in zip(trials, returns, strict=True):
                value = job._return_value  # noqa: SLF001 - None when the run failed
                if value is None:
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                else:
                    study.tell(trial, float(value))
        best = study.best_trial
        OmegaConf.save(
            OmegaConf.create({"best_value": best.value, "best_params": best.params}),
            sweep_dir / "optimization_results.yaml",
        )
        return None
