"""A small typed-schema checker: dataclasses describe what a `_target_` accepts.

Hydra's structured configs reject a wrong type, but not a negative learning rate or nesterov
without momentum, and their errors span several lines. These schemas check types, ranges,
choices and cross-field rules of the composed config before torch is imported, and fail with one
line that names the key and what is valid.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from research.config.errors import ConfigError
from research.config.moved_keys import moved_key_hint

# numpy's (and so Lightning's seed_everything's) seed range is 0 .. 2**32 - 1.
MAX_SEED = 2**32 - 1
_HYDRA_KEYS = {"_target_", "_partial_", "_recursive_", "_convert_", "_args_"}
SCHEMAS: dict[str, type[Schema]] = {}
S = TypeVar("S", bound="Schema")


def spec(default: Any = dataclasses.MISSING, **rules: Any) -> Any:
    """A dataclass field with range rules: gt, ge, lt, le, choices. `id_if_changed=True` marks a
    field added after runs existed, with a default that keeps their result: it joins a run's
    id only when set to another value, so those runs keep their ids."""
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=rules)
    return dataclasses.field(default=default, metadata=rules)


def listed_choices(choices: Iterable[Any]) -> str:
    """Choices as a user writes them in YAML or an override: None is `null`."""
    return ", ".join(dict.fromkeys("null" if c is None else str(c) for c in choices))


class Schema:
    """Base of every schema; subclasses are dataclasses that name the `_target_` they describe."""

    targets: ClassVar[tuple[str, ...]] = ()
    # Keys passed through unchecked (e.g. sub-modules, which have schemas of their own).
    passthrough: ClassVar[tuple[str, ...]] = ()
    # Keys a config must have (an entry config's groups a run builds from): `~model` is refused.
    required: ClassVar[tuple[str, ...]] = ()
    # A datamodule: the kind of batch its loaders yield (a name from research.config.batches).
    gives: ClassVar[str | None] = None
    # A task, network or loss: the kinds of batch it can take; () takes whatever the data gives.
    takes: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for target in cls.targets:
            SCHEMAS[target] = cls

    def check(self, at: str) -> None:
        """Cross-field rules; `at` is the config path of this node, for the error message."""

    def check_run(self, at: str, target: str, config: dict[str, Any]) -> None:
        """Rules that involve other parts of the run's resolved `config` (e.g. a schedule and the
        run's length); `target` is this node's `_target_`."""

    def check_machine(self, at: str, target: str, config: dict[str, Any]) -> None:
        """What this machine must hold for the run (a dataset's files): checked before a run
        starts (research.run.preflight), not when a config is only composed (`--cfg job`, an
        ablation's plan, run ids), since the files may be made later; `target` is this node's
        `_target_`."""

    @classmethod
    def build(cls: type[S], config: S | None = None, params: Mapping[str, Any] | None = None) -> S:
        """The checked config a component is constructed from: `config` as given, or `params`
        (keyword arguments, e.g. from Hydra's instantiate) checked exactly as the CLI checks
        them before torch loads, so a wrong value fails the same way in Python and on the
        command line."""
        name = cls.__name__.removesuffix("Config")
        if config is not None:
            if params:
                raise ConfigError(
                    f"{name}: pass a {cls.__name__} or keyword arguments, not both "
                    f"(got {', '.join(sorted(params))} too)"
                )
            if not isinstance(config, cls):
                raise ConfigError(f"{name}: config must be a {cls.__name__}, got {config!r}")
            config.check(name)
            return config
        return check_node(name, plain(dict(params or {})), cls)  # type: ignore[return-value]

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Each field that has a default, with that default (a fresh copy of a list)."""
        found = {}
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            if field.default is not dataclasses.MISSING:
                found[field.name] = field.default
            elif field.default_factory is not dataclasses.MISSING:
                found[field.name] = field.default_factory()
        return found

    def as_dict(self) -> dict[str, Any]:
        """Field values as plain containers (what a checkpoint or save_pretrained stores)."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]


def plain(value: Any) -> Any:
    """OmegaConf containers (what instantiate passes for list and dict values) as plain ones."""
    if type(value).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def fail(at: str, key: str, message: str) -> typing.NoReturn:
    name = f"{at}.{key}" if at else key
    raise ConfigError(f"{name}{message}" if message.startswith("=") else f"{name} {message}")


def type_name(tp: Any) -> str:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) is list:
        (inner,) = typing.get_args(tp) or (Any,)
        return f"a list of {type_name(inner)}"
    if typing.get_origin(tp) is typing.Literal:
        return " or ".join(map(repr, typing.get_args(tp)))
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any) -> tuple[bool, Any]:
    """Return (ok, value converted to `tp`); ints pass as floats, nothing else is guessed."""
    if tp is Any:
        return True, value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            ok, converted = _coerce(value, arg)
            if ok:
                return True, converted
        return False, value
    if origin is list:
        (inner,) = typing.get_args(tp) or (Any,)
        if not isinstance(value, (list, tuple)):
            return False, value
        items = [_coerce(v, inner) for v in value]
        return all(ok for ok, _ in items), [v for _, v in items]
    if origin is typing.Literal:
        return value in typing.get_args(tp) and type(value) is not bool, value
    if tp is type(None):
        return value is None, value
    if tp is bool:
        return isinstance(value, bool), value
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value
    if tp is str:
        return isinstance(value, str), value
    return isinstance(value, tp), value


def _check_rules(at: str, key: str, value: Any, rules: dict[str, Any]) -> None:
    if value is None or isinstance(value, (list, bool)):
        return
    if isinstance(value, float) and not math.isfinite(value):
        fail(at, key, f"={value!r} is not a finite number; give a finite value")
    choices = rules.get("choices")
    if choices is not None and value not in choices:
        listed = listed_choices(choices)
        fail(at, key, f"={value!r} is not valid; choose one of: {listed}")
    bounds: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
        "gt": (lambda v, b: v > b, ">"),
        "ge": (lambda v, b: v >= b, ">="),
        "lt": (lambda v, b: v < b, "<"),
        "le": (lambda v, b: v <= b, "<="),
    }
    for name, (ok, sign) in bounds.items():
        if name in rules and isinstance(value, (int, float)) and not ok(value, rules[name]):
            fail(at, key, f"={value!r} is out of range; it must be {sign} {rules[name]}")


def check_node(at: str, node: dict[str, Any], schema: type[Schema]) -> Schema:
    """Check one config node (a plain dict, resolved) against its schema; return the instance."""
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for key, value in node.items():
        if key in _HYDRA_KEYS or key in schema.passthrough:
            continue
        if key not in fields:
            moved = moved_key_hint(f"{at}.{key}" if at else key)
            if moved:
                raise ConfigError(moved)
            valid = ", ".join(sorted(fields) + list(schema.passthrough))
            owner = schema.targets[0] if schema.targets else schema.__name__
            fail(at, key, f"is not an option of {owner}; valid options: {valid}")
        ok, converted = _coerce(value, hints[key])
        if not ok:
            fail(at, key, f"={value!r} must be {type_name(hints[key])}")
        _check_rules(at, key, converted, dict(fields[key].metadata))
        values[key] = converted
    missing = [
        name
        for name, f in fields.items()
        if name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        fail(at, missing[0], "is required but missing")
    instance = schema(**values)  # type: ignore[call-arg]
    instance.check(at)
    return instance


def walk_targets(node: Any, at: str = "") -> Iterable[tuple[str, dict[str, Any]]]:
    """Yield (path, node) for every dict with a `_target_` below `node`, outermost first."""
    if isinstance(node, dict):
        if node.get("_target_"):
            yield at, node
        for key, value in node.items():
            yield from walk_targets(value, f"{at}.{key}" if at else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk_targets(value, f"{at}[{i}]")
