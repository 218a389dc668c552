"""An Optuna study as the search sweeper keeps it: its sampler and pruner from config, its identity
(the config it searches around), and a sampler seed that differs on every resume.

A study resumed with the sampler seeded as on its first start would draw its first trials again
(TPE's startup trials are random draws from that seed), so the seed is derived from the
configured seed and the number of trials already in the study: reproducible for a given history,
never the same stream twice.
"""

from __future__ import annotations

import json
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep

from research import compat
from research.config.errors import ConfigError

SAMPLERS = ("tpe", "random", "cmaes", "grid")
PRUNERS = ("none", "median", "successive_halving", "hyperband", "threshold")
CONFIG_ATTR = "research:config"
# A trial a signal or a crash stopped: failed in the study, yet not one of its n_trials.
INTERRUPTED_ATTR = "research:interrupted"


def sweep_of(name: str, spec: str) -> Any:
    """The Hydra sweep object of `name=spec` (choice, range, interval)."""
    sweep = OverridesParser.create().parse_override(f"{name}={spec}").value()
    if not isinstance(sweep, (ChoiceSweep, RangeSweep, IntervalSweep)):
        raise ConfigError(
            f"hparams_search param {name}={spec} is not a search space; use choice(...), "
            "range(...), interval(...) or tag(log, interval(...))"
        )
    return sweep


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


def resume_seed(seed: int | None, trials_so_far: int) -> int | None:
    """The sampler seed of a (re)start: the configured seed mixed with the trials already run."""
    import numpy as np

    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed), trials_so_far]).generate_state(1)[0])


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


def counted_trials(study: Any) -> int:
    """Trials that count towards n_trials: completed, pruned, or failed by their own run; not
    those a signal or a crash of the sweep stopped (they are redrawn)."""
    import optuna

    states = optuna.trial.TrialState
    return sum(
        t.state in (states.COMPLETE, states.PRUNED)
        or (t.state == states.FAIL and INTERRUPTED_ATTR not in t.user_attrs)
        for t in study.get_trials(deepcopy=False)
    )


def fail_interrupted(study: Any, numbers: list[int], why: str) -> None:
    """Mark the running trials `numbers` failed, noting `why` they never finished."""
    import optuna

    running = optuna.trial.TrialState.RUNNING
    for trial in study.get_trials(deepcopy=False, states=(running,)):
        if trial.number in numbers:
            compat.optuna_live_trial(study, trial).set_user_attr(INTERRUPTED_ATTR, why)
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)


def grid_done(study: Any) -> bool:
    """True when a grid search has tried every point: a further trial would repeat one."""
    is_exhausted = getattr(study.sampler, "is_exhausted", None)
    return bool(is_exhausted and is_exhausted(study))
