"""A Hydra sweeper that lets Optuna (>= 3) choose each trial's overrides.

hydra-optuna-sweeper 1.3 pins optuna < 3, and with optuna 2.10 and SQLAlchemy 2 its database
storage fails, so an interrupted search could not resume. This sweeper asks a current Optuna
for `n_jobs` trials at a time, hands them to the configured Hydra launcher (basic, submitit),
and tells Optuna each job's return value: the best checkpoint's monitored metric, as returned by
`research-train`. With a storage URL the study lives in a database; re-running the same command
continues it up to `n_trials` finished trials; a trial a signal or a crash stopped is marked failed
and does not count, so the rerun draws another in its place. A grid search ends with its grid.

Search spaces use Hydra's sweep syntax: `choice(a, b)`, `range(1, 8)`, `interval(0.0, 0.5)`,
`tag(log, interval(1e-4, 1e-1))`. The sampler and pruner come from config (study.py); each trial
is sampled with a seed of its own, so a resumed study and parallel workers on one study (the same
command started N times) draw new trials; a study refuses a changed non-searched config. Each
job gets `trial=<number>` (metrics.json, W&B config, run name); the job reports its `val/*`
monitor per epoch to the study when a pruner is set. At the end the best trial is printed with its
run dir and W&B id.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.core.override_parser.types import ChoiceSweep, RangeSweep
from hydra.core.utils import JobStatus
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.research_sweeper._heartbeat import beating
from hydra_plugins.research_sweeper._study import (
    build_pruner,
    check_identity,
    check_search,
    fail_abandoned,
    fail_interrupted,
    grid_done,
    open_study,
    search_sampler,
    study_config,
    sweep_of,
    trials_left,
)
from hydra_plugins.research_sweeper.base import LaunchingSweeper
from research.config.errors import ConfigError


def _suggest(trial: Any, name: str, spec: str) -> Any:
    """One override value from a Hydra sweep expression."""
    sweep = sweep_of(name, spec)
    if isinstance(sweep, ChoiceSweep):
        return trial.suggest_categorical(name, list(sweep.list))
    if isinstance(sweep, RangeSweep):
        return trial.suggest_int(name, int(sweep.start), int(sweep.stop) - 1, step=int(sweep.step))
    log = "log" in sweep.tags
    if isinstance(sweep.start, int) and isinstance(sweep.end, int):
        return trial.suggest_int(name, sweep.start, sweep.end, log=log)
    return trial.suggest_float(name, float(sweep.start), float(sweep.end), log=log)


def _plain(node: Any) -> dict[str, Any]:
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)  # type: ignore[return-value]
    return dict(node or {})


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
        sampler: Any = None,
        pruner: Any = None,
    ) -> None:
        self.study_name, self.storage, self.direction = study_name, storage, direction
        self.n_trials, self.n_jobs, self.seed = n_trials, n_jobs, seed
        self.params = dict(params or {})
        self.sampler_cfg, self.pruner_cfg = _plain(sampler), _plain(pruner)

    def _study(self) -> Any:
        """Create or load the study, check its config and give it this search's sampler."""
        from research.config.validate import resolve

        if self.storage and self.storage.startswith("sqlite:///"):
            Path(self.storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        seed = self.sampler_cfg.get("seed")
        seed = self.seed if seed is None else seed
        study = open_study(
            self.study_name, self.storage, self.direction, build_pruner(self.pruner_cfg)
        )
        assert self.config is not None
        config = study_config(resolve(self.config), list(self.params))
        check_identity(study, config, self.storage or "memory")
        study.sampler = search_sampler(self.sampler_cfg, self.params, seed)
        return study

    def sweep(self, arguments: list[str]) -> Any:
        try:
            self._search(arguments)
        except ConfigError as err:
            # One line and exit status 2, as for any config mistake; no job has run.
            print(f"hparams_search: error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
        return None

    def _search(self, arguments: list[str]) -> None:
        assert self.launcher is not None
        check_search(self.sampler_cfg, self.pruner_cfg, self.params)
        sweep_dir = self.prepare_sweep_dir()
        study = self._study()
        job_index = 0
        while (left := self._left(study)) > 0 and not grid_done(study):
            trials = [study.ask() for _ in range(min(self.n_jobs, left))]
            batch = [
                [
                    *arguments,
                    *(f"{k}={_suggest(t, k, v)}" for k, v in self.params.items()),
                    f"trial={t.number}",
                ]
                for t in trials
            ]
            self.validate_batch_is_legal(batch)
            try:
                with beating(trials):
                    returns = self.launcher.launch(batch, initial_job_idx=job_index)
            except KeyboardInterrupt as stop:  # research.interrupt.Interrupted: any signal
                # Not a result of its parameters: failed, and not counted, so a rerun of the
                # same command draws a new trial in its place.
                fail_interrupted(
                    study, [t.number for t in trials], f"interrupted by {stop or 'SIGINT'}"
                )
                raise
            job_index += len(batch)
            for trial, job in zip(trials, returns, strict=True):
                self._tell(study, trial, job)
        self._report_best(study, sweep_dir)

    def _left(self, study: Any) -> int:
        """Trials still to start, after failing those a dead worker left running."""
        fail_abandoned(study)
        return trials_left(study, self.n_trials)

    def _tell(self, study: Any, trial: Any, job: Any) -> None:
        """Record a finished job in the study: its value, or pruned / failed."""
        import optuna

        from research.tracking.run_dir import read_metrics

        output_dir = OmegaConf.select(job.hydra_cfg or {}, "hydra.runtime.output_dir")
        run_dir = Path(output_dir) if output_dir else None
        if run_dir is not None:
            trial.set_user_attr("run_dir", str(run_dir))
        status = (read_metrics(run_dir) or {}).get("status") if run_dir else None
        value = job.return_value if job.status == JobStatus.COMPLETED else None
        if status == "pruned":
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        elif value is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, float(value))

    def _report_best(self, study: Any, sweep_dir: Path) -> None:
        """Print the best trial with its run dir and W&B id, and save it; without a completed
        trial say why instead."""
        import optuna

        from research.tracking.run_dir import read_metrics

        complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        if not complete:
            print(
                f"hparams_search: error: no trial of study {study.study_name!r} produced an "
                f"objective ({len(study.trials)} trials, none completed with a value); a run "
                "returns its best checkpoint's monitored metric, so keep checkpointing on (no "
                "debug=fdr / trainer.fast_dev_run) and see the trials' metrics.json",
                file=sys.stderr,
            )  # the failed trials make the exit status 1 (sweep_summary.json)
            return
        best = study.best_trial
        run_dir = best.user_attrs.get("run_dir")
        wandb_id = (
            ((read_metrics(Path(run_dir)) or {}).get("wandb") or {}).get("run_id")
            if run_dir
            else None
        )
        OmegaConf.save(
            OmegaConf.create(
                {
                    "best_trial": best.number,
                    "best_value": best.value,
                    "best_params": best.params,
                    "run_dir": run_dir,
                    "wandb_run_id": wandb_id,
                }
            ),
            sweep_dir / "optimization_results.yaml",
        )
        params = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in best.params.items()
        )
        print(
            f"best trial {best.number} of study {study.study_name!r}: {best.value:.6g} "
            f"({params}); run dir: {run_dir}; W&B run id: {wandb_id}"
        )
