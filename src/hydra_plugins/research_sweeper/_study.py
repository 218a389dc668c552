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
import warnings
from typing import Any

from hydra_plugins.research_sweeper._heartbeat import GRACE_S
from hydra_plugins.research_sweeper._space import (
    command_line_space,
    grid_points,
    search_space,
    sweep_of,
)
from research import compat
from research.config.errors import ConfigError

__all__ = ["command_line_space", "sweep_of"]  # their home is _space.py

SAMPLERS = ("tpe", "random", "cmaes", "grid")
PRUNERS = ("none", "median", "successive_halving", "hyperband", "threshold")
CONFIG_ATTR = "research:config"
# The search settings a study keeps (directions, objectives, the sampler flags below).
SEARCH_ATTR = "research:search"
# TPESampler flags whose defaults Optuna 5 changed (multivariate, constant_liar: off in 4.x, on
# in 5.x; group needs multivariate): always given from config, with the official plugin's and
# Optuna 4's defaults, so one config builds one sampler on every Optuna the project allows.
TPE_FLAGS = {"multivariate": False, "group": False, "constant_liar": False}
# A trial a signal or a crash stopped: failed in the study, yet not one of its n_trials.
INTERRUPTED_ATTR = "research:interrupted"


def _grid(params: dict[str, str]) -> dict[str, list[Any]]:
    return {name: grid_points(name, spec) for name, spec in params.items()}


def sampler_flags(cfg: dict[str, Any]) -> dict[str, bool]:
    """The TPE flags of `hydra.sweeper.sampler` (TPE_FLAGS' defaults where not given), refused
    in one line unless true or false, or set for a sampler that has no such flag."""
    flags = {}
    for flag, default in TPE_FLAGS.items():
        value = cfg.get(flag, default)
        if not isinstance(value, bool):
            raise ConfigError(f"hydra.sweeper.sampler.{flag}={value}: give true or false")
        flags[flag] = value
    name = str(cfg.get("name", "tpe"))
    on = [f for f, v in flags.items() if v]
    if on and name != "tpe":
        raise ConfigError(
            f"hydra.sweeper.sampler.{on[0]}=true is a flag of TPE, not of sampler {name}; set "
            f"it false or use hydra.sweeper.sampler.name=tpe"
        )
    if flags["group"] and not flags["multivariate"]:
        raise ConfigError(
            "hydra.sweeper.sampler.group=true needs sampler.multivariate=true (TPE groups "
            "params only in its multivariate model)"
        )
    return flags


def build_sampler(cfg: dict[str, Any], params: dict[str, str], seed: int | None) -> Any:
    """An Optuna sampler from `hydra.sweeper.sampler` ({name, n_startup_trials, and TPE's
    multivariate, group, constant_liar})."""
    import optuna

    name = str(cfg.get("name", "tpe"))
    startup = cfg.get("n_startup_trials")
    flags = sampler_flags(cfg)
    if name == "tpe":
        extra = {} if startup is None else {"n_startup_trials": int(startup)}
        with warnings.catch_warnings():  # chosen in config: not news at every trial
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(seed=seed, **flags, **extra)
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
    """Build every searched distribution, the sampler and the pruner once, so that a mistake in
    any of them is refused before the study database or the sweep folder is written."""
    search_space(params)
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


def open_study(
    study_name: str, storage: str | None, directions: str | list[str], pruner: Any
) -> Any:
    """Create the study or load it (Optuna loads an existing one with its own directions:
    `check_settings` compares them). Workers that create one new study at once race inside
    Optuna's set-up of a new database (a loser sees "table already exists" or a duplicate version
    row): the loser waits a moment and opens it again, by then made by the winner."""
    import time

    import optuna
    import sqlalchemy.exc

    def create() -> Any:
        return optuna.create_study(
            study_name=study_name,
            storage=storage,
            directions=[directions] if isinstance(directions, str) else list(directions),
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


def search_settings(
    directions: list[str], objectives: list[str] | None, sampler: dict[str, Any]
) -> dict[str, Any]:
    """What a study's trials must share besides the config: what they optimize, and how the
    sampler that draws them is set."""
    flags = sampler_flags(sampler)
    return {
        "direction": list(directions),
        "objectives": None if objectives is None else list(objectives),
        **{f"sampler.{k}": v for k, v in flags.items()},
    }


def check_settings(study: Any, settings: dict[str, Any], where: str) -> None:
    """Store the search settings in a study that has none (a new one, or one made before they
    were kept); for one that has them, raise ConfigError naming each that differs. The study's
    directions are Optuna's own, compared always."""
    own = [d.name.lower() for d in study.directions]
    stored = {**study.user_attrs.get(SEARCH_ATTR, settings), "direction": own}
    keys = [k for k in settings if stored.get(k) != settings[k]]
    if keys:
        shown = ", ".join(
            f"hydra.sweeper.{k} (study: {_setting(stored.get(k))}, now: {_setting(settings[k])})"
            for k in keys
        )
        raise ConfigError(
            f"study {study.study_name!r} in {where} was run with other search settings: {shown}; "
            "run with the study's settings or choose a new hydra.sweeper.study_name"
        )
    if SEARCH_ATTR not in study.user_attrs:
        study.set_user_attr(SEARCH_ATTR, settings)


def _setting(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return f"[{', '.join(map(str, value))}]"
    return str(value).lower() if isinstance(value, bool) else str(value)


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
