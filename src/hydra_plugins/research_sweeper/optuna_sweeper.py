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

Search spaces use Hydra's sweep syntax, read as Hydra's own Optuna sweeper reads it (_space.py):
`choice(a, b)`, `range(1, 8)` (8 included), `interval(0.0, 0.5)`, `tag(log, interval(1e-4,
1e-1))`; a key the command line sweeps is searched in place of its `params` entry, and one it
gives a plain value is fixed, out of the space. `custom_search_space` names a function
`(cfg, trial)` that may suggest more params for each trial. The sampler and pruner come from
config (_study.py); each trial is sampled with a seed of its own, so a resumed study and parallel
workers on one study draw new trials; a study refuses a changed non-searched config and changed
search settings (directions, objectives, TPE flags). Each job gets `trial=<number>` (metrics.json,
W&B config, run name); the job reports its `val/*` monitor per epoch to the study when a pruner
is set. With several directions each trial's values are the metrics `objectives` names, from its
metrics.json (_objectives.py). At the end the best trial (or the Pareto front) is printed with
its run dir and W&B id, and saved in optimization_results.yaml.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.core.utils import JobStatus
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from hydra_plugins.research_sweeper._heartbeat import GRACE_S, beating, interval_for
from hydra_plugins.research_sweeper._objectives import (
    check_objectives,
    directions_of,
    objective_names,
    objective_values,
    objectives_of,
    pareto_lines,
)
from hydra_plugins.research_sweeper._space import (
    dry_run,
    extended,
    fixed_keys,
    load_hook,
    search_space,
    suggest,
    values_to_check,
)
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
    check_settings,
    command_line_space,
    counted_trials,
    fail_abandoned,
    fail_interrupted,
    grid_done,
    open_study,
    past_budget,
    search_done,
    search_sampler,
    search_settings,
    study_config,
    trials_left,
)
from hydra_plugins.research_sweeper.base import LaunchingSweeper
from research.config.errors import ConfigError, one_line

# Who refuses a search's mistakes in their one line (the config group that chose this sweeper).
PROG = "hparams_search"
# How often a worker with nothing to start looks at the study again: to end soon after the
# search does, and to redraw a dead worker's trial.
WAIT_S = 2.0


def _plain(node: Any) -> dict[str, Any]:
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)  # type: ignore[return-value]
    return dict(node or {})


def _listed(node: Any) -> Any:
    """A list setting as Hydra hands it over (a ListConfig) as a plain list."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, ListConfig) else node


class OptunaStudySweeper(LaunchingSweeper):
    def __init__(
        self,
        study_name: str,
        storage: str | None,
        direction: str | list[str],
        n_trials: int,
        n_jobs: int = 1,
        seed: int | None = None,
        params: dict[str, str] | None = None,
        sampler: Any = None,
        pruner: Any = None,
        n_workers: int = 1,
        heartbeat_grace_s: float = GRACE_S,
        objectives: str | list[str] | None = None,
        custom_search_space: str | None = None,
    ) -> None:
        self.study_name, self.storage = study_name, storage
        self.directions = directions_of(_listed(direction))
        self.objectives = objectives_of(_listed(objectives))
        self.n_trials, self.n_jobs, self.seed = n_trials, n_jobs, seed
        self.n_workers, self.heartbeat_grace_s = n_workers, float(heartbeat_grace_s)
        self.params = dict(params or {})
        self.sampler_cfg, self.pruner_cfg = _plain(sampler), _plain(pruner)
        self.custom_search_space = custom_search_space
        # Set by `check`: the command line's fixed overrides, and each searched distribution.
        self.fixed: list[str] = []
        self.space: dict[str, Any] = {}

    def _study(self) -> Any:
        """Create or load the study, check its config and give it this search's sampler."""
        from research.config.validate import resolve

        seed = self.sampler_cfg.get("seed")
        seed = self.seed if seed is None else seed
        study = open_study(
            self.study_name,
            open_storage(self.storage),
            self.directions,
            build_pruner(self.pruner_cfg),
        )
        assert self.config is not None
        config = study_config(resolve(self.config), list(self.params))
        where = shown(self.storage) if self.storage else "memory"
        check_identity(study, config, where)
        settings = search_settings(self.directions, self.objectives, self.sampler_cfg)
        check_settings(study, settings, where)
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
        if self.custom_search_space is not None:
            load_hook(str(self.custom_search_space))
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

    @classmethod
    def check_line(cls, hydra: DictConfig, overrides: list[str]) -> list[str]:
        """The command line whose jobs hold every value a trial can get, for the pre-flight to
        compose and check: the fixed overrides, each choice, both ends of an interval, and a
        range's ends with its `stop` (which trials draw, and Hydra's own `range` leaves out).
        Empty when nothing is searched."""
        params = {k: str(v) for k, v in _plain(OmegaConf.select(hydra, "sweeper.params")).items()}
        fixed, space = command_line_space(list(overrides), params)
        searched = [_values_line(name, spec) for name, spec in space.items()]
        return [*fixed, *searched] if searched else []

    def _check_settings(self, submitit: Mapping[str, Any] | None) -> None:
        """What the budget, the direction, `n_workers` and the heartbeat need, refused before
        anything is written."""
        whole = isinstance(self.n_trials, int) and not isinstance(self.n_trials, bool)
        if not whole or self.n_trials < 1:
            raise ConfigError(
                f"hydra.sweeper.n_trials={self.n_trials!r}: give a whole number of trials, >= 1"
            )
        sampler = str(self.sampler_cfg.get("name", "tpe"))
        check_objectives(self.directions, self.objectives, self.pruner_cfg, sampler)
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
        self._prepare(arguments)
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

    def _prepare(self, fixed: list[str]) -> None:
        """Build the space's distributions and try the custom_search_space hook once on a
        throwaway trial: both refused in one line before the study is written."""
        self.fixed, self.space = fixed, search_space(self.params)
        if self.custom_search_space is not None:
            path = str(self.custom_search_space)
            dry_run(load_hook(path), path, self.config, self.space, fixed_keys(fixed))

    def work(self, arguments: list[str]) -> None:
        """One worker of `n_workers` (a process of its own): pull trials until the study is
        done; the command that started the workers reports it."""
        assert self.config is not None
        keep_secret(self.config, self.storage)
        self.fixed, self.space = arguments, search_space(self.params)
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
        try:
            batch = [
                [*arguments, *(f"{k}={v}" for k, v in self._draw(t).items()), f"trial={t.number}"]
                for t in trials
            ]
        except BaseException:  # the hook's own mistake: no trial is left RUNNING for it
            fail_interrupted(study, [t.number for t in trials], "its overrides could not be drawn")
            raise
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

    def _draw(self, trial: Any) -> dict[str, Any]:
        """A trial's searched overrides: the space's params, then those the custom_search_space
        hook suggests."""
        drawn = {name: suggest(trial, name, dist) for name, dist in self.space.items()}
        if self.custom_search_space is None:
            return drawn
        path = str(self.custom_search_space)
        every = extended(load_hook(path), path, self.config, trial, fixed_keys(self.fixed))
        return {**drawn, **every}

    def _tell(self, study: Any, trial: Any, job: Any) -> None:
        """Record a finished job in the study: its value, or pruned / failed."""
        import optuna

        from research.tracking.run_dir import read_metrics

        output_dir = OmegaConf.select(job.hydra_cfg or {}, "hydra.runtime.output_dir")
        run_dir = Path(output_dir) if output_dir else None
        if run_dir is not None:
            with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
                trial.set_user_attr("run_dir", str(run_dir))
        record = (read_metrics(run_dir) or {}) if run_dir else {}
        status = record.get("status")
        value = job.return_value if job.status == JobStatus.COMPLETED else None
        values = None if value is None else [float(value)]
        if self.objectives is not None:  # read from the record, whatever the job returned
            values, missing = None, None
            if job.status == JobStatus.COMPLETED and status == "completed":
                values, missing = objective_values(record, self.objectives)
            if missing:
                print(
                    f"{PROG}: warning: trial {trial.number} is failed: its metrics.json has "
                    f"{missing}; hydra.sweeper.objectives names metrics.json's metrics",
                    file=sys.stderr,
                )
        # skip_if_finished: a worker stalled past the heartbeat grace may find its trial failed
        # by another worker (and redrawn); its own result then stays out of the study.
        if status == "pruned":
            study.tell(trial, state=optuna.trial.TrialState.PRUNED, skip_if_finished=True)
        elif values is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
        else:
            study.tell(trial, values, skip_if_finished=True)

    def _report_best(self, study: Any, sweep_dir: Path) -> None:
        """Print the best trial (the Pareto front, with several objectives) with its run dir and
        W&B id, and save it; without a completed trial say why instead."""
        import optuna

        complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        if not complete:
            why = (
                f"each reads hydra.sweeper.objectives ({', '.join(self.objectives)}) from its "
                "metrics.json"
                if self.objectives
                else "a run returns its best checkpoint's monitored metric, so keep "
                "checkpointing on (no debug=fdr / trainer.fast_dev_run)"
            )
            print(
                f"{PROG}: error: no trial of study {study.study_name!r} produced an "
                f"objective ({len(study.trials)} trials, none completed with a value); {why}, "
                "and see the trials' metrics.json",
                file=sys.stderr,
            )  # the failed trials make the exit status 1 (sweep_summary.json)
            return
        results: dict[str, Any] = {"study": study.study_name, "storage": shown(self.storage)}
        if self.objectives:
            results["objectives"] = self.objectives
        if len(self.directions) > 1:
            self._report_front(study, sweep_dir, results, len(complete))
            return
        best = study.best_trial
        run_dir, wandb_id = _where(best)
        results.update(
            best_trial=best.number,
            best_value=best.value,
            best_params=best.params,
            run_dir=run_dir,
            wandb_run_id=wandb_id,
        )
        OmegaConf.save(OmegaConf.create(results), sweep_dir / RESULTS_FILE)
        print(
            f"best trial {best.number} of study {study.study_name!r}: {best.value:.6g} "
            f"({_shown_params(best.params)}); run dir: {run_dir}; W&B run id: {wandb_id}"
        )

    def _report_front(
        self, study: Any, sweep_dir: Path, results: dict[str, Any], complete: int
    ) -> None:
        """The Pareto front of a multi-objective search: the trials no other trial beats in
        every objective, as Hydra's plugin saves them (`solutions`: params and values), each
        with its trial number, run dir and W&B id."""
        solutions = []
        for trial in sorted(study.best_trials, key=lambda t: t.number):
            run_dir, wandb_id = _where(trial)
            solutions.append(
                {
                    "trial": trial.number,
                    "params": trial.params,
                    "values": list(trial.values),
                    "run_dir": run_dir,
                    "wandb_run_id": wandb_id,
                }
            )
        results.update(directions=self.directions, solutions=solutions)
        OmegaConf.save(OmegaConf.create(results), sweep_dir / RESULTS_FILE)
        names = objective_names(self.objectives, self.directions)
        goals = ", ".join(f"{n} {d[:3]}" for n, d in zip(names, self.directions, strict=True))
        print(
            f"Pareto front of study {study.study_name!r} ({goals}): {len(solutions)} of "
            f"{complete} completed trials\n{pareto_lines(solutions, names)}"
        )


RESULTS_FILE = "optimization_results.yaml"


def _values_line(name: str, spec: str) -> str:
    """`name=<values>` sweeping what the pre-flight composes of `name=spec`: a choice as written
    (its values may need Hydra's quoting), numbers as the distribution's checked values."""
    values = values_to_check(name, spec)
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return f"{name}={','.join(repr(v) for v in values)}"
    return f"{name}={spec}"


def _where(trial: Any) -> tuple[str | None, str | None]:
    """A trial's run dir and the W&B run id its metrics.json records."""
    from research.tracking.run_dir import read_metrics

    run_dir = trial.user_attrs.get("run_dir")
    record = (read_metrics(Path(run_dir)) or {}) if run_dir else {}
    return run_dir, (record.get("wandb") or {}).get("run_id")


def _shown_params(params: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
    )
