"""An Optuna study as the search sweeper keeps it: its sampler and pruner from config, its identity
(the config it searches around), and what parallel workers on it share.

Several workers (`hydra.sweeper.n_workers`, or the same command started N times on one storage)
may run one study: the study is opened safely when they create it at once, each trial is sampled
with a seed of its own (_seeding.py), a worker fails only the trials no worker is running any more
(_heartbeat.py), and the trial budget counts the trials other workers are running.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep

from hydra_plugins.research_sweeper._heartbeat import GRACE_S
from research import compat
from research.config.errors import ConfigError

SAMPLERS = ("tpe", "random", "cmaes", "grid")
PRUNERS = ("none", "median", "successive_halving", "hyperband", "threshold")
CONFIG_ATTR = "research:config"
# A trial a signal or a crash stopped: failed in the study, yet not one of its n_trials.
INTERRUPTED_ATTR = "research:interrupted"


def sweep_of(name: str, spec: str) -> Any:
    """The Hydra sweep object of `name=spec` (choice, range, interval), refused in one line where
    Optuna could not sample it (it would raise at the first trial, after the study is written)."""
    sweep = OverridesParser.create().parse_override(f"{name}={spec}").value()
    if not isinstance(sweep, (ChoiceSweep, RangeSweep, IntervalSweep)):
        raise ConfigError(
            f"hparams_search param {name}={spec} is not a search space; use choice(...), "
            "range(...), interval(...) or tag(log, interval(...))"
        )
    if isinstance(sweep, IntervalSweep) and not sweep.start <= sweep.end:
        raise ConfigError(
            f"hparams_search param {name}={spec}: the interval starts above its end; give "
            f"interval(low, high) with low <= high"
        )
    if isinstance(sweep, IntervalSweep) and "log" in sweep.tags and not sweep.start > 0:
        raise ConfigError(
            f"hparams_search param {name}={spec}: a log-scale interval needs a start > 0, "
            "e.g. tag(log, interval(1e-5, 1e-1))"
        )
    return sweep


def command_line_space(
    arguments: list[str], params: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The command line's fixed overrides, and the search space with its sweeps
    (`key=interval(...)`, `key=a,b`) in place of `params`' entry for the same key: a job takes
    one value per key, so a search samples what the command line sweeps, as Hydra's own Optuna
    sweeper does."""
    fixed, space = [], dict(params)
    for override in OverridesParser.create().parse_overrides(arguments):
        if override.is_sweep_override():
            key = override.get_key_element()
            space[key] = override.input_line[len(key) + 1 :]
        else:
            fixed.append(override.input_line)
    return fixed, space


def _grid(params: dict[str, str]) -> dict[str, list[Any]]:
    space = {}
    for name, spec in params.items():
        sweep = sweep_of(name, spec)
        if isinstance(sweep, ChoiceSweep):
            space[name] = list(sweep.list)
        elif isinstance(sweep, RangeSweep):
            space[name] = list(range(int(sweep.start), int(sweep.stop), int(sweep.step)))
        else:
            raise ConfigError(
                f"sampler grid needs a finite space: {name}={spec} is an interval; use "
                "choice(...) or range(...)"
            )
    return space


def build_sampler(cfg: dict[str, Any], params: dict[str, str], seed: int | None) -> Any:
    """An Optuna sampler from `hydra.sweeper.sampler` ({name, n_startup_trials})."""
    import optuna

    name = str(cfg.get("name", "tpe"))
    startup = cfg.get("n_startup_trials")
    if name == "tpe":
        extra = {} if startup is None else {"n_startup_trials": int(startup)}
        return optuna.samplers.TPESampler(seed=seed, **extra)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        extra = {} if startup is None else {"n_startup_trials": int(startup)}
        return optuna.samplers.CmaEsSampler(seed=seed, **extra)
    if name == "grid":
        from hydra_plugins.research_sweeper._grid_sampler import ask_tell_grid_sampler

        return ask_tell_grid_sampler(_grid(params), seed, INTERRUPTED_ATTR)
    raise ConfigError(f"hydra.sweeper.sampler.name={name}: choose one of: {', '.join(SAMPLERS)}")


def search_sampler(cfg: dict[str, Any], params: dict[str, str], seed: int | None) -> Any:
    """The sampler a search runs with: each trial seeded from (seed, trial number), so workers on
    one study and resumes of it draw new trials; the grid keeps `seed` itself (it orders the grid,
    and every worker must agree on that order)."""
    if seed is None or str(cfg.get("name", "tpe")) == "grid":
        return build_sampler(cfg, params, seed)
    from hydra_plugins.research_sweeper._seeding import per_trial_sampler

    return per_trial_sampler(lambda trial_seed: build_sampler(cfg, params, trial_seed), seed)


def check_search(sampler: dict[str, Any], pruner: dict[str, Any], params: dict[str, str]) -> None:
    """Parse every searched space and build the sampler and pruner once, so that a mistake in
    any of them is refused before the study database or the sweep folder is written."""
    for name, spec in params.items():
        sweep_of(name, spec)
    build_sampler(sampler, params, seed=None)
    build_pruner(pruner)


def build_pruner(cfg: dict[str, Any]) -> Any:
    """An Optuna pruner from `hydra.sweeper.pruner` ({name, n_startup_trials, n_warmup_steps,
    lower, upper})."""
    import optuna

    name = str(cfg.get("name", "none"))
    if name == "none":
        return optuna.pruners.NopPruner()
    if name == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=int(cfg.get("n_startup_trials", 5)),
            n_warmup_steps=int(cfg.get("n_warmup_steps", 0)),
        )
    if name == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner()
    if name == "threshold":
        lower, upper = cfg.get("lower"), cfg.get("upper")
        if lower is None and upper is None:
            raise ConfigError(
                "hydra.sweeper.pruner.name=threshold needs pruner.lower or pruner.upper: a trial "
                "whose monitored metric falls below lower (or above upper) is pruned"
            )
        return optuna.pruners.ThresholdPruner(
            lower=None if lower is None else float(lower),
            upper=None if upper is None else float(upper),
            n_warmup_steps=int(cfg.get("n_warmup_steps", 0)),
        )
    raise ConfigError(f"hydra.sweeper.pruner.name={name}: choose one of: {', '.join(PRUNERS)}")


def open_study(study_name: str, storage: str | None, direction: str, pruner: Any) -> Any:
    """Create the study or load it. Workers that create one new study at once race inside
    Optuna's set-up of a new database (a loser sees "table already exists" or a duplicate version
    row): the loser waits a moment and opens it again, by then made by the winner."""
    import time

    import optuna
    import sqlalchemy.exc

    def create() -> Any:
        return optuna.create_study(
            study_name=study_name,
            storage=storage,
            direction=direction,
            pruner=pruner,
            load_if_exists=True,
        )

    for delay in (0.05, 0.1, 0.2, 0.4, 0.8):
        try:
            return create()
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError):
            time.sleep(delay)
    return create()


def study_config(task_config: dict[str, Any], searched: list[str]) -> dict[str, Any]:
    """The flat identity config of a search: what its trials compute, minus the searched keys."""
    from research.tracking.identity import flatten, identity_content

    flat = flatten(identity_content(task_config))
    kept = {k: v for k, v in flat.items() if k not in searched}
    return json.loads(json.dumps(kept, default=str))


def check_identity(study: Any, config: dict[str, Any], where: str) -> None:
    """Store `config` in a new study; for a resumed one, raise ConfigError naming every key whose
    value differs from the study's own."""
    stored = study.user_attrs.get(CONFIG_ATTR)
    if stored is None:
        if not study.trials:
            study.set_user_attr(CONFIG_ATTR, config)
        return
    keys = sorted(k for k in {*stored, *config} if stored.get(k) != config.get(k))
    if keys:
        shown = ", ".join(
            f"{k} (study: {stored.get(k)!r}, now: {config.get(k)!r})" for k in keys[:5]
        )
        more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
        raise ConfigError(
            f"study {study.study_name!r} in {where} was run with another config: {shown}{more}; "
            "run with the study's config or choose a new hydra.sweeper.study_name"
        )


def _counts(trial: Any) -> bool:
    """Whether a finished trial counts towards n_trials: completed, pruned, or failed by its own
    run; not one a signal or a crash of the sweep stopped (it is redrawn)."""
    import optuna

    states = optuna.trial.TrialState
    return trial.state in (states.COMPLETE, states.PRUNED) or (
        trial.state == states.FAIL and INTERRUPTED_ATTR not in trial.user_attrs
    )


def counted_trials(study: Any) -> int:
    """Trials that count towards n_trials."""
    return sum(_counts(t) for t in study.get_trials(deepcopy=False))


def past_budget(study: Any, numbers: list[int], n_trials: int) -> list[int]:
    """Of the trials `numbers` just asked, those past the budget: workers that ask for the last
    trials at the same moment each see them free, so each asked trial takes a slot in the order
    of its number (unique, from the storage) and those after the `n_trials`-th give way."""
    import optuna

    running = optuna.trial.TrialState.RUNNING
    holding = sorted(
        t.number for t in study.get_trials(deepcopy=False) if t.state == running or _counts(t)
    )
    return [n for n in numbers if n in holding and holding.index(n) >= n_trials]


def fail_interrupted(study: Any, numbers: list[int], why: str) -> None:
    """Mark the running trials `numbers` failed, noting `why` they never finished."""
    import optuna

    running = optuna.trial.TrialState.RUNNING
    for trial in study.get_trials(deepcopy=False, states=(running,)):
        if trial.number in numbers:
            # Another worker may fail the same abandoned trial first: then leave it be.
            with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
                compat.optuna_live_trial(study, trial).set_user_attr(INTERRUPTED_ATTR, why)
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)


def fail_abandoned(study: Any, grace_s: float = GRACE_S) -> None:
    """Fail (uncounted) the RUNNING trials whose worker died without a word (no sign of life for
    `grace_s` seconds); leave those another live worker is running."""
    import time

    import optuna

    from hydra_plugins.research_sweeper._heartbeat import abandoned

    now = time.time()
    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    stale = [t.number for t in running if abandoned(t, now, grace_s)]
    if stale:
        fail_interrupted(
            study, stale, f"left running by a search or worker silent for over {grace_s:g} s"
        )


def trials_left(study: Any, n_trials: int) -> int:
    """How many more trials a worker may start: `n_trials` less those counted and those other
    workers are running (a worker calls this with none of its own running)."""
    import optuna

    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    return n_trials - counted_trials(study) - len(running)


def search_done(study: Any, n_trials: int) -> bool:
    """True when no worker has anything left to do: none is running (a running one may yet fail
    and need redrawing), and `n_trials` count or a grid is done."""
    import optuna

    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    return not running and (counted_trials(study) >= n_trials or grid_done(study))


def grid_done(study: Any) -> bool:
    """True when a grid search has tried every point: a further trial would repeat one."""
    is_exhausted = getattr(study.sampler, "is_exhausted", None)
    return bool(is_exhausted and is_exhausted(study))
