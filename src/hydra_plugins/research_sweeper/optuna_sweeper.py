"""A Hydra sweeper that lets Optuna (>= 4) choose each trial's overrides.

hydra-optuna-sweeper 1.3 pins optuna < 3, and with optuna 2.10 and SQLAlchemy 2 its database
storage fails, so an interrupted search could not resume. This sweeper asks a current Optuna
for `n_jobs` trials at a time, hands them to the configured Hydra launcher (basic, submitit),
and tells Optuna each job's return value: the best checkpoint's monitored metric, as returned by
`research-train`. With a storage (_storage.py: a database or a journal file) re-running the same
command continues the study up to `n_trials` finished trials; a trial a signal or a crash stopped
is marked failed and does not count, so the rerun draws another in its place. A grid search ends
with its grid.

With `n_workers` > 1 the command starts that many worker processes (_workers.py), each pulling
trials from the shared study and running them in-process until `n_trials` count; the command
waits for them and reports the study once. A worker whose trials are all done waits while others
still run theirs: one of them may die, and its trial (failed once its heartbeat is older than
`heartbeat_grace_s`) be redrawn.

Search spaces use Hydra's sweep syntax: `choice(a, b)`, `range(1, 8)`, `interval(0.0, 0.5)`,
`tag(log, interval(1e-4, 1e-1))`; a key the command line sweeps is searched in place of its
`params` entry (as with Hydra's own Optuna sweeper), since a job takes one value per key. The
sampler and pruner come from config (study.py); each trial is sampled with a seed of its own, so
a resumed study and parallel workers on one study draw new trials; a study refuses a changed
non-searched config. Each job gets `trial=<number>`
(metrics.json, W&B config, run name); the job reports its `val/*` monitor per epoch to the study
when a pruner is set. At the end the best trial is printed with its run dir and W&B id.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.core.override_parser.types import ChoiceSweep, RangeSweep
from hydra.core.utils import JobStatus
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from hydra_plugins.research_sweeper._heartbeat import GRACE_S, beating, interval_for
from hydra_plugins.research_sweeper._storage import (
    check_storage,
    keep_secret,
    open_storage,
    redact,
    shown,
)
from hydra_plugins.research_sweeper._study import (
    build_pruner,
    check_identity,
    check_search,
    command_line_space,
    counted_trials,
    fail_abandoned,
    fail_interrupted,
    grid_done,
    open_study,
    past_budget,
    search_done,
    search_sampler,
    study_config,
    sweep_of,
    trials_left,
)
from hydra_plugins.research_sweeper.base import LaunchingSweeper
from research.config.errors import ConfigError, one_line

# Who refuses a search's mistakes in their one line (the config group that chose this sweeper).
PROG = "hparams_search"
# How often a worker with nothing to start looks at the study again: to end soon after the
# search does, and to redraw a dead worker's trial.
WAIT_S = 2.0


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
        n_workers: int = 1,
        heartbeat_grace_s: float = GRACE_S,
    ) -> None:
        self.study_name, self.storage, self.direction = study_name, storage, direction
        self.n_trials, self.n_jobs, self.seed = n_trials, n_jobs, seed
        self.n_workers, self.heartbeat_grace_s = n_workers, float(heartbeat_grace_s)
        self.params = dict(params or {})
        self.sampler_cfg, self.pruner_cfg = _plain(sampler), _plain(pruner)

    def _study(self) -> Any:
        """Create or load the study, check its config and give it this search's sampler."""
        from research.config.validate import resolve

        seed = self.sampler_cfg.get("seed")
        seed = self.seed if seed is None else seed
        study = open_study(
            self.study_name,
            open_storage(self.storage),
            self.direction,
            build_pruner(self.pruner_cfg),
        )
        assert self.config is not None
        config = study_config(resolve(self.config), list(self.params))
        check_identity(study, config, shown(self.storage) if self.storage else "memory")
        study.sampler = search_sampler(self.sampler_cfg, self.params, seed)
        return study

    def sweep(self, arguments: list[str]) -> Any:
        try:
            self._search(arguments)
        except ConfigError as err:
            # One line and exit status 2, as for any config mistake; no job has run.
            print(f"{PROG}: error: {redact(str(err), self.storage)}", file=sys.stderr)
            raise SystemExit(2) from None
        return None

    def check(
        self, arguments: list[str], submitit: Mapping[str, Any] | None
    ) -> tuple[list[str], dict[str, str]]:
        """Refuse what needs no study and no job: the space, sampler and pruner, the settings,
        the storage's URL. Returns the command line's fixed overrides and the search space
        (`command_line_space`). `submitit`: the submitit launcher's parameters, else None."""
        arguments, params = command_line_space(arguments, self.params)
        check_search(self.sampler_cfg, self.pruner_cfg, params)
        self._check_settings(submitit)
        check_storage(self.storage)
        return arguments, params

    @classmethod
    def check_command(cls, hydra: DictConfig, overrides: list[str]) -> None:
        """The sweeper's `check` on a command's composed `hydra` node (`overrides`: the command
        line's task overrides), before research-train composes the jobs of the search space: a
        mistake there is refused at once rather than after those compositions and Hydra's own."""
        try:
            settings = OmegaConf.to_container(hydra.sweeper, resolve=True)
            launcher = OmegaConf.to_container(hydra.launcher, resolve=True)
        except OmegaConfBaseException as err:
            raise ConfigError(one_line(err), prog=PROG) from None
        assert isinstance(settings, dict) and isinstance(launcher, dict)
        settings.pop("_target_", None)
        valid = list(inspect.signature(cls).parameters)
        unknown = [k for k in settings if k not in valid]
        if unknown:
            raise ConfigError(
                f"hydra.sweeper.{unknown[0]} is not a setting of the Optuna search; valid: "
                f"{', '.join(valid)}",
                prog=PROG,
            )
        submitit = launcher if "hydra_submitit_launcher" in str(launcher.get("_target_")) else None
        storage = settings.get("storage")
        try:
            cls(**settings).check(overrides, submitit)
        except ConfigError as err:
            raise ConfigError(redact(str(err), storage), prog=PROG) from None

    def _check_settings(self, submitit: Mapping[str, Any] | None) -> None:
        """What the budget, the direction, `n_workers` and the heartbeat need, refused before
        anything is written."""
        whole = isinstance(self.n_trials, int) and not isinstance(self.n_trials, bool)
        if not whole or self.n_trials < 1:
            raise ConfigError(
                f"hydra.sweeper.n_trials={self.n_trials!r}: give a whole number of trials, >= 1"
            )
        if self.direction not in ("maximize", "minimize"):
            raise ConfigError(
                f"hydra.sweeper.direction={self.direction}: choose maximize or minimize (by "
                "default the checkpoint's mode decides: max -> maximize)"
            )
        if not isinstance(self.n_workers, int) or self.n_workers < 1:
            raise ConfigError(
                f"hydra.sweeper.n_workers={self.n_workers}: give a whole number of workers, >= 1"
            )
        if not self.heartbeat_grace_s > 0:
            raise ConfigError(
                f"hydra.sweeper.heartbeat_grace_s={self.heartbeat_grace_s:g}: give the seconds "
                "after which a silent worker's trial is failed and redrawn, > 0"
            )
        if self.n_workers == 1:
            return
        if not self.storage:
            raise ConfigError(
                f"hydra.sweeper.n_workers={self.n_workers} needs a storage every worker reaches, "
                "not a study in memory (hydra.sweeper.storage=null); use sqlite:///<file>.db on "
                "one machine, postgresql://... or journal://<file>.log across machines"
            )
        if self.n_jobs != 1:
            raise ConfigError(
                f"hydra.sweeper.n_jobs={self.n_jobs} with n_workers={self.n_workers}: each worker "
                "runs one trial at a time; give the parallelism as n_workers"
            )
        from hydra_plugins.research_sweeper._workers import check_launcher

        check_launcher(submitit)

    def _search(self, arguments: list[str]) -> None:
        from hydra_plugins.hydra_submitit_launcher.submitit_launcher import BaseSubmititLauncher

        assert self.launcher is not None
        submitit = self.launcher.params if isinstance(self.launcher, BaseSubmititLauncher) else None
        arguments, self.params = self.check(arguments, submitit)
        study = self._study()
        assert self.config is not None
        keep_secret(self.config, self.storage)
        sweep_dir = self.prepare_sweep_dir()
        if self.n_workers == 1:
            self._pull(study, arguments)
            self._report_best(study, sweep_dir)
            return
        from hydra_plugins.research_sweeper._workers import run_workers

        logs = run_workers(self, study, arguments, sweep_dir)
        self._report_best(study, sweep_dir)
        if not search_done(study, self.n_trials):
            # No job folder tells of a worker that never ran a trial: say it, and fail.
            print(
                f"{PROG}: error: every worker ended before the search did "
                f"({counted_trials(study)} of {self.n_trials} trials count); see their logs in "
                f"{logs} and run the same command again to continue the study",
                file=sys.stderr,
            )
            raise SystemExit(1)

    def work(self, arguments: list[str]) -> None:
        """One worker of `n_workers` (a process of its own): pull trials until the study is
        done; the command that started the workers reports it."""
        assert self.config is not None
        keep_secret(self.config, self.storage)
        self._pull(self._study(), arguments)

    def _pull(self, study: Any, arguments: list[str]) -> None:
        """Run trials until `n_trials` count (or a grid is done) and none is running. While the
        last ones run in other workers, wait: one of them may die, and its trial be redrawn
        here."""
        while True:
            fail_abandoned(study, self.heartbeat_grace_s)
            if search_done(study, self.n_trials):
                return
            left = trials_left(study, self.n_trials)
            if left > 0 and not grid_done(study):
                self._run(study, arguments, min(self.n_jobs, left))
            else:
                time.sleep(min(WAIT_S, interval_for(self.heartbeat_grace_s)))

    def _run(self, study: Any, arguments: list[str], n: int) -> None:
        """Ask for `n` trials, launch them, and tell the study how each ended. A job folder is
        numbered by its trial, so workers sharing a sweep dir never share a folder."""
        from hydra_plugins.research_sweeper._workers import WORKER_ATTR, this_worker

        assert self.launcher is not None
        trials = [study.ask() for _ in range(n)]
        late = past_budget(study, [t.number for t in trials], self.n_trials)
        if late:  # drawn nothing yet: withdrawn, and not counted
            fail_interrupted(study, late, "withdrawn: other workers took the last trials")
            trials = [t for t in trials if t.number not in late]
            if not trials:
                return
        worker = this_worker()
        for trial in trials:
            trial.set_user_attr(WORKER_ATTR, worker)
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
            with beating(trials, interval_for(self.heartbeat_grace_s)):
                returns = self.launcher.launch(batch, initial_job_idx=trials[0].number)
        except BaseException as stop:  # research.interrupt.Interrupted (any signal), an exit
            # Not a result of its parameters: failed, and not counted, so a rerun of the
            # same command (or another worker) draws a new trial in its place.
            why = (
                f"interrupted by {stop or 'SIGINT'}"
                if isinstance(stop, KeyboardInterrupt)
                else f"stopped by {type(stop).__name__}"
            )
            fail_interrupted(study, [t.number for t in trials], why)
            raise
        for trial, job in zip(trials, returns, strict=True):
            self._tell(study, trial, job)

    def _tell(self, study: Any, trial: Any, job: Any) -> None:
        """Record a finished job in the study: its value, or pruned / failed."""
        import optuna

        from research.tracking.run_dir import read_metrics

        output_dir = OmegaConf.select(job.hydra_cfg or {}, "hydra.runtime.output_dir")
        run_dir = Path(output_dir) if output_dir else None
        if run_dir is not None:
            with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
                trial.set_user_attr("run_dir", str(run_dir))
        status = (read_metrics(run_dir) or {}).get("status") if run_dir else None
        value = job.return_value if job.status == JobStatus.COMPLETED else None
        # skip_if_finished: a worker stalled past the heartbeat grace may find its trial failed
        # by another worker (and redrawn); its own result then stays out of the study.
        if status == "pruned":
            study.tell(trial, state=optuna.trial.TrialState.PRUNED, skip_if_finished=True)
        elif value is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
        else:
            study.tell(trial, float(value), skip_if_finished=True)

    def _report_best(self, study: Any, sweep_dir: Path) -> None:
        """Print the best trial with its run dir and W&B id, and save it; without a completed
        trial say why instead."""
        import optuna

        from research.tracking.run_dir import read_metrics

        complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        if not complete:
            print(
                f"{PROG}: error: no trial of study {study.study_name!r} produced an "
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
                    "study": study.study_name,
                    "storage": shown(self.storage),
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
