"""Compose and validate the configs a command line asks for, before Hydra launches any job.

A sweep is checked value by value (every value of every swept key at least once), so a typo in
the fifth value of a 20-job multirun fails in a second instead of after four finished jobs.
Whatever Hydra's parser or composition raises (a grammar mistake, a missing option, an unknown key
or group, a YAML syntax error) becomes one line here, with the closest valid name where there is
one; Hydra's own syntax (sweep functions, `hydra.searchpath`) is left to Hydra.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_dir
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Override, RangeSweep
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research import compat
from research.config.errors import ConfigError, one_line
from research.config.moved_keys import moved_key_hint
from research.config.paths import config_dir
from research.config.shared_compositions import compose_job, shared_compositions, sharing
from research.config.validate import validate
from research.utils.engine_versions import version_base

GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"


@contextmanager
def _hydra() -> Iterator[None]:
    """Hydra initialized on research's configs (its config loader lists group options)."""
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        yield


def _loader() -> ConfigLoader | None:
    hydra = GlobalHydra.instance()
    return hydra.config_loader() if hydra.is_initialized() else None


def _parse(overrides: Sequence[str]) -> list[Override]:
    """Hydra's parse of `overrides`; within `_hydra()` `glob(...)` can list a group's options,
    as Hydra's own sweeper does. A grammar mistake is one line naming the override."""
    try:
        return OverridesParser.create(config_loader=_loader()).parse_overrides(list(overrides))
    except OverrideParseException as err:
        lines = [ln.strip() for ln in err.message.splitlines() if ln.strip()]
        lines = [ln for ln in lines if not ln.startswith(("See https:", "Error parsing", "^"))]
        reason = "; ".join(re.sub(r"^\w+ while evaluating '[^']*': ", "", ln) for ln in lines)
        raise ConfigError(
            f"{err.override}: {reason}; see Hydra's override grammar: {GRAMMAR}"
        ) from None
    except HydraException as err:
        raise ConfigError(one_line(err)) from None


def _settings(override: Override) -> list[str] | None:
    """The concrete `key=value` overrides an override stands for (one per swept value); None
    for a search interval (sampled per job; `search_check_line` checks its ends)."""
    if override.is_interval_sweep():
        return None
    if not override.is_sweep_override():
        return [override.input_line]
    try:
        values = list(override.sweep_string_iterator())
    except (HydraException, ValueError) as err:
        raise ConfigError(f"{override.input_line}: {one_line(err)}") from None
    if not values:
        raise ConfigError(
            f"{override.input_line} sweeps no value; give at least one (e.g. a,b or range(0,3); "
            "glob() patterns must match a config of the group)"
        )
    return [f"{override.get_key_element()}={value}" for value in values]


def expand(overrides: Sequence[str], single: bool = False) -> list[list[str]]:
    """Concrete override lists that together try every value of every swept key once.

    `single` (no -m): a swept value is refused in one line here; Hydra would reject it only when
    the job starts, with a multi-line message."""
    parsed = _parse(overrides)
    for override in parsed:  # a key that moved: Hydra would add it (+) or call it unknown
        moved = moved_key_hint(override.key_or_group, override.input_line)
        if moved:
            raise ConfigError(moved)
    swept = [o.input_line for o in parsed if o.is_sweep_override()] if single else []
    if swept:
        raise ConfigError(
            f"{swept[0]} sweeps several values: add -m to run one job per value, or quote it "
            "('a,b') or make it a list ([a,b]) to pass one value"
        )
    columns = [settings for override in parsed if (settings := _settings(override)) is not None]
    if not columns:
        return [[]]
    first = [col[0] for col in columns]
    combos = [first]
    for i, col in enumerate(columns):
        for value in col[1:]:
            combos.append([*first[:i], value, *first[i + 1 :]])
    return combos


def _dotted_keys(node: Any, at: str = "") -> list[str]:
    """Every key path below `node`, e.g. model.net.position."""
    if not isinstance(node, dict):
        return []
    paths = []
    for key, value in node.items():
        path = f"{at}.{key}" if at else str(key)
        paths += [path, *_dotted_keys(value, path)]
    return paths


def _line_of(overrides: Sequence[str], key: str) -> str:
    """The command-line override that sets `key` (as typed), else `key` itself."""
    return next(
        (o for o in overrides if re.split(r"[=@]", o.lstrip("~+"), maxsplit=1)[0] == key), key
    )


def _alike(key: str, keys: list[str]) -> list[str]:
    """The keys whose last part is spelled like `key`'s: a long shared path alone made
    `model.net.nope` look like `model.net` or `model.net.dropout`."""
    leaf = key.rpartition(".")[2]
    return [
        k
        for k in keys
        if not key.startswith(f"{k}.")
        and difflib.SequenceMatcher(None, leaf, k.rpartition(".")[2]).ratio() >= 0.75
    ]


def _one_word_apart(key: str, keys: list[str]) -> list[str]:
    """The keys beside `key` whose last part is `key`'s with one `_word` more or less: the
    spelling of one setting in another command (research-train's `ckpt_path`, research-eval's
    `ckpt`), too short a word for a close spelling. Suggested only when it is the one such key
    (`trainer.max` could be max_epochs, max_steps or max_time)."""
    parent, _, leaf = key.rpartition(".")

    def apart(other: str) -> bool:
        shorter, longer = sorted((leaf, other), key=len)
        extra = longer.removeprefix(f"{shorter}_")
        return bool(shorter) and extra != longer and "_" not in extra

    return [k for k in keys if k.rpartition(".")[0] == parent and apart(k.rpartition(".")[2])]


def _unknown_key(config_name: str, overrides: list[str], key: str) -> str:
    """An override of a key the config does not have: the closest key or config group (a typo
    in `model=...` is one), and what the parent node has, composed with the command line's
    other group choices (other key overrides may be unknown too)."""
    line = _line_of(overrides, key)
    if key == "hydra.sweeper.params":  # a struct node: only ++ merges a new key into it
        return (
            f"{line}: adds a key to the search space, which Hydra merges only as "
            f"++{line.lstrip('+')}; or sweep the key on the command line, e.g. "
            "'trainer.max_epochs=choice(1,2)'"
        )
    kept = [
        o
        for o in overrides
        if o != line and ("." not in o.split("=", 1)[0] or o.startswith("hydra.searchpath="))
    ]
    try:
        cfg = compose(config_name=config_name, overrides=kept)
    except (HydraException, OmegaConfBaseException, ValueError, yaml.YAMLError):
        return f"{line}: no such key"
    loader = _loader()
    groups = [g for g in loader.list_groups("") if g != "hydra"] if loader else []
    keys = [*groups, *_dotted_keys(OmegaConf.to_container(cfg, resolve=False))]
    if line.startswith("~") and key in keys:  # Hydra cannot delete a null or ??? value
        return f"{line}: {key} has no value to remove; set one with {key}=<value> if need be"
    close = difflib.get_close_matches(key, _alike(key, keys), n=1, cutoff=0.75)
    apart = _one_word_apart(key, keys)
    close = close or (apart if len(apart) == 1 else [])
    message = f"{line}: no such key or config group" if "." not in key else f"{line}: no such key"
    message += f"; did you mean {close[0]}?" if close else ""
    parent = key
    while parent:
        parent = parent.rpartition(".")[0]
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if isinstance(node, DictConfig):
            names = sorted(str(k) for k in node if not str(k).startswith("_"))
            message += f"; {parent or 'the config'} has: {', '.join(names)}"
            break
    if not close and not line.startswith("~"):
        message += f"; to add a new key write +{line.lstrip('+')}"
    return message


def _missing_config(err: MissingConfigException, overrides: list[str]) -> str | None:
    """A group option that is not there: the options the search path holds (conf/ and any
    hydra.searchpath folder), and which file named it when the command line did not."""
    group, _, name = str(err.missing_cfg_file).rpartition("/")
    if not group or err.options is None:
        return None
    named_in = re.match(r"In '([^']+)':", str(err))
    where = named_in.group(1) if named_in else ""
    line = _line_of(overrides, group)
    if "/" in where and not where.startswith("hydra/"):  # a defaults list in that file
        line = f"{where}.yaml: {group}={name}"
    elif line == group:
        line = f"{group}={name} (from a defaults list)"
    searched = f"conf/{group}/" + (
        " or hydra.searchpath" if any(o.startswith("hydra.searchpath=") for o in overrides) else ""
    )
    return f"{line}: no such config in {searched}; choose one of: {', '.join(err.options)}"


def _group_message(err: BaseException, overrides: list[str]) -> str | None:
    """Hydra's defaults-list refusals that name no override: `group=null` for a group that is
    not optional, `+group=x` for a group the defaults list has already."""
    text = str(err)
    loader = _loader()
    groups = set(loader.list_groups("")) if loader else set()
    if text.startswith("Config group override must be a string or a list"):
        for line in overrides:
            group, _, value = line.partition("=")
            if group in groups and value == "null":
                options = ", ".join(loader.get_group_options(group)) if loader else ""
                return f"{line}: {group} cannot be null; choose one of: {options}"
    twice = re.match(r"(?:Multiple values for (\S+?)\.|(\S+) appears more than once)", text)
    if twice:
        group = twice.group(1) or twice.group(2)
        line = next((o for o in overrides if o.startswith(f"+{group}=")), None)
        if line is not None:
            return (
                f"{line}: {group} is in the defaults list already; choose its config with "
                f"{line[1:]} (no +)"
            )
    return None


def _explain(err: BaseException, config_name: str, overrides: list[str]) -> str:
    """One line for whatever Hydra's composition raised."""
    if isinstance(err, MissingConfigException):
        message = _missing_config(err, overrides)
        if message:
            return message
    unknown = re.match(r"Could not (?:override|delete from config\.) '([^']+)'", str(err))
    if unknown:
        return _unknown_key(config_name, overrides, unknown.group(1))
    present = re.match(r"Could not append to config\. An item is already at '([^']+)'", str(err))
    if present:
        key = present.group(1)
        line = _line_of(overrides, key)
        fix = line.lstrip("+") if line != key else f"{key}=<value>"
        return f"{line}: {key} is in the config already; set it with {fix} (no +)"
    return _group_message(err, overrides) or one_line(err)


def _compose_one(config_name: str, overrides: list[str]) -> DictConfig:
    try:
        return compose(config_name=config_name, overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException, ValueError, yaml.YAMLError) as err:
        raise ConfigError(_explain(err, config_name, overrides)) from None


def compose_all(
    config_name: str, overrides: Sequence[str], single: bool = False
) -> list[DictConfig]:
    """The config of each concrete override list of `expand`, Hydra's own node included (its
    `hydra.sweep.dir` says where a multirun will write); Hydra is released afterwards. Jobs that
    choose the same configs share one composition (`shared_compositions`); a lone job outside
    such a scope is composed by Hydra alone."""
    with _hydra():
        combos = expand(overrides, single)
        if len(combos) == 1 and not sharing():
            return [_compose_one(config_name, combos[0])]
        with shared_compositions():
            return [compose_job(config_name, combo, _compose_one) for combo in combos]


def _shuffled(override: Override) -> bool:
    value = override.value()
    return isinstance(value, (ChoiceSweep, RangeSweep)) and value.shuffle


def task_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides each job of a multirun is given: Hydra keeps its own (`hydra.*`)."""
    return [o for o in overrides if not o.lstrip("+~").startswith(("hydra.", "hydra/"))]


def planned_jobs(hydra: DictConfig, overrides: Sequence[str]) -> list[list[str]] | None:
    """The override list of every job a multirun will launch, in launch order (Hydra numbers
    them from 0); None for a sweeper that decides its jobs as it goes (Optuna) and for a
    `shuffle(...)` sweep (Hydra draws its order at launch)."""
    import json

    target = str(OmegaConf.select(hydra, "sweeper._target_") or "")
    task = task_overrides(overrides)
    if not target.endswith((".BasicSweeper", ".ListSweeper")):
        return None
    with _hydra():
        parsed = _parse(task)
    interval = next((o for o in parsed if o.is_interval_sweep()), None)
    if interval is not None:
        raise ConfigError(
            f"{interval.input_line}: interval() samples a range, which only a search sweeper "
            "does (hparams_search=optuna); a plain -m sweep takes listed values: a,b, "
            "range(), choice(), glob()"
        )
    if any(map(_shuffled, parsed)):
        return None
    combinations = compat.hydra_basic_sweep_jobs(parsed)
    if target.endswith(".BasicSweeper"):
        return combinations
    # The list sweeper: each listed job once per combination of the command line's sweeps.
    listed = json.loads(Path(str(hydra.sweeper.jobs_file)).read_text())
    return [[*combination, *job] for job in listed for combination in combinations]


def search_check_line(hydra: DictConfig, overrides: Sequence[str]) -> list[str]:
    """The command line that checks a search's space: the command line's fixed overrides, the
    sweeper's `params` less the keys the command line sweeps itself, and every interval as its
    two ends. Composed, it checks every searched key and every choice and interval end before a
    study is written (the command line's own choices were composed with it already). Empty
    when nothing is searched."""
    params = OmegaConf.select(hydra, "sweeper.params")
    params = params if isinstance(params, DictConfig) else {}
    with _hydra():
        typed = _parse(overrides)
        swept = {o.get_key_element() for o in typed if o.is_sweep_override()}
        space = _parse([f"{k}={v}" for k, v in params.items() if k not in swept])
    searched = []
    for override in [*space, *(o for o in typed if o.is_interval_sweep())]:
        if override.is_interval_sweep():
            interval = override.value()
            searched.append(f"{override.get_key_element()}={interval.start},{interval.end}")
        else:
            searched.append(override.input_line)
    if not searched:
        return []
    return [*(o.input_line for o in typed if not o.is_sweep_override()), *searched]


def check_command_line(config_name: str, overrides: Sequence[str]) -> list[dict[str, Any]]:
    """Raise ConfigError (one line) if any job of this command line would get a bad config;
    return the resolved configs that were checked (the first is the first job's)."""
    return [validate(cfg, entry=config_name) for cfg in compose_all(config_name, overrides)]


def hydra_node(composed: DictConfig) -> DictConfig:
    """The `hydra` node (run and sweep dirs, sweeper, launcher) of a config `compose_all`
    returned. Its dirs' names hold the start time (Hydra caches `now` per config), so the
    caller reads them once, pins them, and reads the sweep's summary after."""
    node = OmegaConf.select(composed, "hydra")
    assert isinstance(node, DictConfig)
    return node
