"""Hydra's `instantiate` with every OmegaConf container handed over as a plain list or dict, and
only declared targets allowed to run.

Without `_convert_="all"`, a list from the config reaches the object as a ListConfig, and what
the object keeps of it can end up where OmegaConf does not belong: in a checkpoint (an
optimizer's param groups hold its `betas`; torch 2.6 keeps them as given, 2.14 makes them a
tuple), which the weights-only loading of every checkpoint here then refuses, or in a library's
`isinstance(..., list)` check (Lightning 2.4 takes a ListConfig of plugins for one plugin).

A config may name any callable as a `_target_`; Hydra 1.4 calls only those its execution
allow-list names (1.5 will refuse the rest), and of a function it also checks a callable result
(a loss function that returns an `nn.Module`). A declaration is trusted Python code, so the
allow-list is the targets that have one, with the return type a declared function states: the
project's components, what it configures of Lightning and torch, and a user's own component
once its configs.py declares it.
"""

from __future__ import annotations

import contextlib
import inspect
import typing
from collections.abc import Iterator
from importlib import import_module
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research.utils.engine_versions import execution_whitelist, hydra_14

# What the shipped `hydra` node has Hydra call itself: its job callback and logging classes.
HYDRA_HOOKS = (
    "research.tracking.sweep_summary.SweepSummary",
    "research.run.noise.QuietConsole",
    "logging.StreamHandler",
    "logging.FileHandler",
)


def targets_in(node: Any) -> Iterator[str]:
    """Every `_target_` in `node` (a config or a plain dict or list), outermost first. Leaves are
    not read (a run dir's name may not resolve yet); an interpolation that fails to resolve holds
    no target of a job's."""
    if isinstance(node, dict | DictConfig):
        target = node.get("_target_")
        if target:
            yield str(target)
        for key in node:
            if key != "_target_":
                yield from targets_in(_child(node, key))
    elif isinstance(node, list | ListConfig):
        for index in range(len(node)):
            yield from targets_in(_child(node, index))


def _child(node: Any, key: Any) -> Any:
    """`node[key]`, or None where reading it would fail: a missing value (`???`), or an
    interpolation that cannot resolve yet."""
    if not isinstance(node, DictConfig | ListConfig):
        return node[key]
    if OmegaConf.is_missing(node, key):
        return None
    try:
        return node[key]
    except OmegaConfBaseException:
        return None


def declared_targets(node: Any) -> list[str]:
    """The targets in `node` that a declaration checks: those Hydra's allow-list admits."""
    from research.config.registry import declaration

    return sorted({t for t in targets_in(node) if declaration(t) is not None})


def _located(path: str) -> Any:
    """The object a dotted path names (the longest importable module, then attributes)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: Any = import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ImportError(f"cannot import {path}")


def returned_type(target: str) -> str | None:
    """The class a function says it returns (`-> nn.CrossEntropyLoss`), as Hydra names a result
    it checks; None for a class, or a function that states no class."""
    found = _located(target)
    if inspect.isclass(found):
        return None
    try:
        returns = typing.get_type_hints(found).get("return")
    except (NameError, TypeError):  # an annotation only a type checker can read
        return None
    return _name(returns) if inspect.isclass(returns) else None


def _name(found: Any) -> str | None:
    """The module-qualified name Hydra gives an object, None where it has none."""
    module, name = getattr(found, "__module__", None), getattr(found, "__qualname__", None)
    return f"{module}.{name}" if module and name else None


def identities(target: str) -> set[str]:
    """The names Hydra 1.4 checks when a config calls `target`: the name as written, the name of
    the object it finds there (a re-exported class: `research.models.transformer.X` is
    `research.models.transformer.encoder.X`), and the class a function returns. A target that
    cannot be found is left to Hydra, whose error names it."""
    try:
        found = _located(target)
    except (ImportError, AttributeError):
        return {target}
    return {target} | ({_name(found), returned_type(target)} - {None})  # type: ignore[operator]


def allowed_targets(node: Any) -> list[str]:
    """Hydra's execution allow-list for `node`: its declared targets, under every name Hydra
    checks."""
    return sorted({name for t in declared_targets(node) for name in identities(t)})


def trusting(node: Any, trusted: bool = True) -> contextlib.AbstractContextManager[Any]:
    """Within the block every target of `node` may run, declared or not, when `trusted`: a saved
    run's config the user vouched for (`trust_run_dir=true`)."""
    if not (trusted and hydra_14()):
        return contextlib.nullcontext()
    return execution_whitelist({name for t in targets_in(node) for name in identities(t)})


def instantiate_plain(node: Any, **kwargs: Any) -> Any:
    """`instantiate(node, **kwargs)` with `_convert_="all"`, allowed to call the declared targets
    of `node` (an undeclared one is refused before the run by the pre-flight)."""
    with execution_whitelist(allowed_targets(node) if hydra_14() else ()):
        return instantiate(node, **kwargs, _convert_="all")
