"""A search space as Hydra's Optuna plugin (hydra-optuna-sweeper) reads one: Hydra's sweep syntax
turned into Optuna distributions, the command line's fixed values taken out of it, and the
`custom_search_space` hook.

The same endpoints as the plugin's `create_optuna_distribution_from_override`:
`range(a, b[, step])` is `IntDistribution(a, b, step)`, or `FloatDistribution(a, b, step=step)`
when an end or the step is a float, so `b` is searched too (Hydra's basic sweeper and Python stop
before it); `shuffle(...)` is a categorical; `interval(a, b)` a float range, `tag(log, ...)` on a
log scale. Every distribution is built once before the study is opened, so one that cannot be
built is refused in one line instead of failing the first trial after the study was written.

Optuna is imported lazily: Hydra's plugin scan imports this package on every command.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from hydra.errors import HydraException

from research.config.errors import ConfigError, one_line

SYNTAX = "choice(...), range(...), interval(...) or tag(log, interval(...))"


def _parsed(name: str, spec: Any) -> Override:
    """`name=spec` as Hydra parses a command-line override; a syntax error is one line."""
    try:
        return OverridesParser.create().parse_override(f"{name}={spec}")
    except HydraException as err:
        raise ConfigError(f"hparams_search param {name}={spec}: {one_line(err)}") from None


def sweep_of(name: str, spec: str) -> Any:
    """The Hydra sweep object of `name=spec` (choice, range, interval), refused in one line where
    Optuna could not sample it (it would raise at the first trial, after the study is written)."""
    sweep = _parsed(name, spec).value()
    if not isinstance(sweep, (ChoiceSweep, RangeSweep, IntervalSweep)):
        raise ConfigError(f"hparams_search param {name}={spec} is not a search space; use {SYNTAX}")
    distribution(name, spec)
    return sweep


def _range_items(override: Override) -> list[Any]:
    """A range's values as Hydra's sweep enumerates them (`stop` excluded), in their order
    (a shuffled range's order is random on every start)."""
    return sorted(override.sweep_iterator())


def distribution(name: str, spec: str) -> Any:
    """The Optuna distribution of `name=spec`, with the endpoints Hydra's Optuna plugin gives it;
    a ConfigError naming the param and what is valid where it cannot be built."""
    import optuna.distributions as od

    override = _parsed(name, spec)
    sweep = override.value()
    where = f"hparams_search param {name}={spec}"
    log = "log" in getattr(sweep, "tags", ())
    if isinstance(sweep, ChoiceSweep):
        if log:
            raise ConfigError(
                f"{where}: tag(log, ...) takes interval(...) or range(...), not a choice"
            )
        choices: list[Any] = list(sweep.list)
        return _built(where, lambda: od.CategoricalDistribution(choices))
    if isinstance(sweep, RangeSweep):
        assert sweep.start is not None and sweep.stop is not None
        if not sweep.step or sweep.step < 0:
            raise ConfigError(
                f"{where}: a search range needs a step > 0; give range(low, high, step=...) "
                "with low <= high (high is searched too)"
            )
        if sweep.shuffle:  # the plugin's categorical, in the written order (see docs)
            items = _range_items(override)
            if not items:
                raise ConfigError(f"{where}: shuffle(range(...)) holds no value; give low < high")
            return _built(where, lambda: od.CategoricalDistribution(items))
        if sweep.start > sweep.stop:
            raise ConfigError(
                f"{where}: the range starts above its end; give range(low, high[, step]) with "
                "low <= high (high is searched too)"
            )
        floats = any(isinstance(v, float) for v in (sweep.start, sweep.stop, sweep.step))
        if log and (floats or sweep.step != 1):
            raise ConfigError(
                f"{where}: a log-scale range takes integers with step 1; for floats use "
                "tag(log, interval(low, high))"
            )
        if log and not sweep.start > 0:
            raise ConfigError(
                f"{where}: a log-scale range needs a start > 0, e.g. tag(log, range(1, 64))"
            )
        if floats:
            low, high, step = float(sweep.start), float(sweep.stop), float(sweep.step)
            return _built(where, lambda: od.FloatDistribution(low, high, step=step))
        low_i, high_i, step_i = int(sweep.start), int(sweep.stop), int(sweep.step)
        if log:
            return _built(where, lambda: od.IntDistribution(low_i, high_i, log=True))
        return _built(where, lambda: od.IntDistribution(low_i, high_i, step=step_i))
    if isinstance(sweep, IntervalSweep):
        if not sweep.start <= sweep.end:
            raise ConfigError(
                f"{where}: the interval starts above its end; give interval(low, high) with "
                "low <= high"
            )
        if log and not sweep.start > 0:
            raise ConfigError(
                f"{where}: a log-scale interval needs a start > 0, e.g. "
                "tag(log, interval(1e-5, 1e-1))"
            )
        low_f, high_f = float(sweep.start), float(sweep.end)
        return _built(where, lambda: od.FloatDistribution(low_f, high_f, log=log))
    raise ConfigError(f"{where} is not a search space; use {SYNTAX}")


def _built(where: str, build: Callable[[], Any]) -> Any:
    """`build()`, its ValueError one line; Optuna's warning that it lowered a `high` the step
    does not reach is not repeated (the docs say so)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return build()
    except ValueError as err:
        raise ConfigError(f"{where}: {one_line(err)}") from None


def search_space(params: dict[str, str]) -> dict[str, Any]:
    """Every searched key's Optuna distribution."""
    return {name: distribution(name, spec) for name, spec in params.items()}


def suggest(trial: Any, name: str, dist: Any) -> Any:
    """Draw `name` from `dist` through Trial's public suggest API."""
    import optuna.distributions as od

    if isinstance(dist, od.CategoricalDistribution):
        return trial.suggest_categorical(name, list(dist.choices))
    if isinstance(dist, od.IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)


def grid_points(name: str, spec: str) -> list[Any]:
    """Every value of a finite space, as the sampler draws them (a range's `high` included)."""
    import optuna.distributions as od

    dist = distribution(name, spec)
    if isinstance(dist, od.CategoricalDistribution):
        return list(dist.choices)
    if isinstance(dist, od.IntDistribution):
        return list(range(dist.low, dist.high + 1, 1 if dist.log else dist.step))
    if dist.step is not None:
        count = round((dist.high - dist.low) / dist.step)
        return [dist.low + i * dist.step for i in range(count + 1)]
    raise ConfigError(
        f"sampler grid needs a finite space: {name}={spec} is an interval; use choice(...) or "
        "range(...)"
    )


def values_to_check(name: str, spec: str) -> list[Any]:
    """The values of `name=spec` a pre-flight composes to check the space as its trials would
    get it: every choice, and both ends of a range or interval (a range's `stop` is searched,
    though Hydra's basic sweeper, which composes `range(...)` for a check, stops before it)."""
    import optuna.distributions as od

    dist = distribution(name, spec)
    if isinstance(dist, od.CategoricalDistribution):
        return list(dist.choices)
    return [dist.low, dist.high]


def _bare(key: str) -> str:
    """A key without Hydra's +, ++ or ~ prefix: `+x` and `x` name one config key."""
    return key.lstrip("+~")


def command_line_space(
    arguments: list[str], params: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The fixed overrides every trial gets, and the search space, as Hydra's Optuna plugin
    builds them from `params` then the command line: a sweep on the command line
    (`key=interval(...)`, `key=a,b`) is searched in place of `params`' entry for that key; a
    plain value there (`key=0.1`) fixes the key, taking it out of the space; a plain value in
    `params` is a fixed override too."""
    fixed: dict[str, str] = {}
    space: dict[str, str] = {}
    entries = [(name, str(spec), _parsed(name, spec)) for name, spec in params.items()]
    try:
        typed = OverridesParser.create().parse_overrides(arguments)
    except HydraException as err:  # Hydra parsed the same line already: not reached in practice
        raise ConfigError(one_line(err)) from None
    entries += [(o.get_key_element(), None, o) for o in typed]
    for name, spec, override in entries:
        key = _bare(override.get_key_element())
        for held in (fixed, space):
            for other in [k for k in held if _bare(k) == key]:
                del held[other]
        if override.is_sweep_override():
            space[name] = spec if spec is not None else override.input_line[len(name) + 1 :]
        else:
            fixed[name] = override.input_line if spec is None else f"{name}={spec}"
    return list(fixed.values()), space


def fixed_keys(fixed: list[str]) -> set[str]:
    """The config keys the fixed overrides set."""
    return {_bare(o.get_key_element()) for o in OverridesParser.create().parse_overrides(fixed)}


def load_hook(path: str) -> Callable[[Any, Any], Any]:
    """The `custom_search_space` function `path` (`module.function`), refused in one line where
    it cannot be imported or called."""
    module, _, attr = path.rpartition(".")
    where = f"hydra.sweeper.custom_search_space={path}"
    try:
        hook = getattr(importlib.import_module(module), attr) if module else None
    except (ImportError, AttributeError) as err:
        raise ConfigError(
            f"{where}: {one_line(err)}; give the dotted path of a function (cfg, trial) -> None "
            "in an importable module"
        ) from None
    if not callable(hook):
        raise ConfigError(
            f"{where} is not a function; give the dotted path of a function (cfg, trial) -> None, "
            "e.g. my_project.search.space"
        )
    return hook


def extended(
    hook: Callable[[Any, Any], Any], path: str, config: Any, trial: Any, fixed: set[str]
) -> dict[str, Any]:
    """Call the `custom_search_space` hook as Hydra's plugin does, after the space's params were
    drawn: `hook(config, trial)` may suggest more params (`trial.suggest_*`, names as override
    keys: `+new.key`), which each job also gets. Returns every param the trial now has; a param
    the command line fixes, or a hook that raises, is a ConfigError."""
    try:
        hook(config, trial)
    except Exception as err:  # noqa: BLE001 - the user's function: any error is its own
        raise ConfigError(
            f"hydra.sweeper.custom_search_space={path} raised {type(err).__name__}: {one_line(err)}"
        ) from None
    clash = sorted(k for k in trial.params if _bare(k) in fixed)
    if clash:
        raise ConfigError(
            f"hydra.sweeper.custom_search_space={path} suggests {clash[0]}, which the command "
            "line fixes; drop the fixed value or the suggestion"
        )
    return dict(trial.params)


def dry_run(
    hook: Callable[[Any, Any], Any], path: str, config: Any, space: dict[str, Any], fixed: set[str]
) -> None:
    """Run the hook once on a trial of a throwaway in-memory study, so that its mistakes are
    refused before the real study is written."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        trial = study.ask()
        for name, dist in space.items():
            suggest(trial, name, dist)
        extended(hook, path, config, trial, fixed)
