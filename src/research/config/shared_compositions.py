"""Jobs of one command line that choose the same configs are composed once.

Checking a sweep or planning an ablation composes one config per job, and a Hydra composition
(the defaults tree, some twenty files merged) takes about 0.25 s here, while most jobs differ
from one another only in values: a seed, a learning rate. Inside `shared_compositions()` a job's
config is Hydra's composition of its config choices, made once per distinct choice, with the
job's value overrides applied to a copy the way Hydra applies them, and the `hydra` node's record
of the overrides rewritten the way Hydra writes it. tests/config/test_shared_compositions.py
holds such configs equal to Hydra's own, `hydra` node included.

These configs are for checking and planning only: every job that runs is composed by Hydra.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from research import compat
from research.config.errors import ConfigError

Compose = Callable[[str, list[str]], DictConfig]

# (config name, config-choosing overrides) -> Hydra's composition of them; None where it failed.
_BASES: ContextVar[dict[tuple[str, tuple[str, ...]], DictConfig | None] | None] = ContextVar(
    "research_shared_compositions", default=None
)


@contextmanager
def shared_compositions() -> Iterator[None]:
    """Compositions made inside are shared by the jobs composed inside (nested scopes share the
    outer one); none outlives the scope, so an edited YAML file is read again by the next."""
    if _BASES.get() is not None:
        yield
        return
    token = _BASES.set({})
    try:
        yield
    finally:
        _BASES.reset(token)


def sharing() -> bool:
    return _BASES.get() is not None


def _top_level_groups() -> set[str]:
    hydra = GlobalHydra.instance()
    return set(hydra.config_loader().list_groups("")) if hydra.is_initialized() else set()


def _sets_a_value(override: Override, groups: Callable[[], set[str]]) -> bool:
    """True for an override that Hydra applies to the composed config rather than to the
    defaults list: not a `hydra` setting (those may move the search path), no package, and a key
    that names no config group (a dotted key never does; groups nest with `/`)."""
    key = override.key_or_group
    if override.is_hydra_override() or override.package is not None or "/" in key:
        return False
    return "." in key or key not in groups()


def compose_job(config_name: str, overrides: list[str], compose: Compose) -> DictConfig:
    """`compose(config_name, overrides)`, from a shared composition of the overrides that choose
    configs where the scope has one. Whatever fails on the shared path is composed by Hydra
    again, so a mistake is reported exactly as Hydra's composition reports it."""
    bases = _BASES.get()
    if bases is None:
        return compose(config_name, overrides)
    parsed = OverridesParser.create().parse_overrides(overrides)
    known: set[str] | None = None

    def groups() -> set[str]:
        nonlocal known
        if known is None:
            known = _top_level_groups()
        return known

    values = [o for o in parsed if _sets_a_value(o, groups)]
    value_ids = {id(o) for o in values}
    choices = tuple(str(o.input_line) for o in parsed if id(o) not in value_ids)
    key = (config_name, choices)
    if key not in bases:
        try:
            bases[key] = compose(config_name, list(choices))
        except ConfigError:  # the job's own composition below names the mistake
            bases[key] = None
    base = bases[key]
    if base is None:
        return compose(config_name, overrides)
    try:
        cfg = copy.deepcopy(base)
        compat.hydra_apply_value_overrides(cfg, values)
        _record_overrides(cfg, parsed)
    except (HydraException, OmegaConfBaseException, ValueError):
        return compose(config_name, overrides)
    return cfg


def _record_overrides(cfg: DictConfig, parsed: list[Override]) -> None:
    """The `hydra` node's record of a job's overrides, as Hydra's composition writes it."""
    node = cfg.hydra
    task = [o for o in parsed if not o.is_hydra_override()]
    node.overrides.hydra = [str(o.input_line) for o in parsed if o.is_hydra_override()]
    node.overrides.task = [str(o.input_line) for o in task]
    node.runtime.cwd = os.getcwd()
    compat.hydra_record_override_dirname(node, task)
