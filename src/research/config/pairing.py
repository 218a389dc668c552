"""Whether the model can train on the data, checked before anything runs or is written.

A data declaration names the kind of batch it gives, a task, network or loss declaration the
kinds it takes (`research.config.batches`). Without this check `model=colbert` on the default digits
composed, made its run dir and W&B run and failed in its first step with an AttributeError, and
a model reading a fact the data lacks (`${data.vocab_size}` on digits) stopped with OmegaConf's
"Interpolation key ... not found". Here both are one line naming the options that fit.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from omegaconf import OmegaConf

from research.config.errors import ConfigError
from research.config.paths import config_dir, group_options
from research.config.registry import declaration
from research.config.schema import Schema, walk_targets

_MISSING_KEY = re.compile(r"Interpolation key '(\w+)\.(\w+)[\w.]*' not found")


def _declared(node: dict[str, Any]) -> type[Schema] | None:
    target = node.get("_target_")
    return declaration(target) if isinstance(target, str) and "${" not in target else None


def gives_of(node: Any) -> str | None:
    """The kind of batch a data node's declaration says it gives; None where it says none."""
    schema = _declared(node) if isinstance(node, dict) else None
    return schema.gives if schema else None


def taken(node: Any) -> tuple[str, ...] | None:
    """The kinds of batch every declared node under `node` takes (a task and its network, in
    order of the first), or None where none says."""
    found = [_declared(n) for _, n in walk_targets(node)]
    takes = [schema.takes for schema in found if schema is not None and schema.takes]
    if not takes:
        return None
    return tuple(kind for kind in takes[0] if all(kind in kinds for kinds in takes[1:]))


def fits(node: Any, gives: str | None) -> bool:
    """Whether the nodes under `node` can train on data that gives `gives` (unknown: yes)."""
    takes = taken(node)
    return gives is None or takes is None or gives in takes


def option_bodies(group: str) -> dict[str, dict[str, Any]]:
    """Each option of a config group as its YAML file holds it, interpolations unresolved."""
    bodies = {}
    for option in group_options(group):
        body = OmegaConf.to_container(OmegaConf.load(config_dir() / group / f"{option}.yaml"))
        bodies[option] = body if isinstance(body, dict) else {}
    return bodies


def option_keys(body: dict[str, Any]) -> set[str]:
    """The keys an option has: its YAML's, and its declaration's (the config source fills the
    declared ones in as it reads the file)."""
    schema = _declared(body)
    return set(body) | ({f.name for f in dataclasses.fields(schema)} if schema else set())


def _named(group: str, node: Any, bodies: dict[str, dict[str, Any]]) -> str:
    """`group=<option>` for the option (of `bodies`, the group's) whose targets `node` has, else
    the group's path and target (an option edited on the command line, or a config from
    elsewhere)."""
    targets = sorted(str(n["_target_"]) for _, n in walk_targets(node))
    for option, body in bodies.items():
        if targets and sorted(str(n["_target_"]) for _, n in walk_targets(body)) == targets:
            return f"{group}={option}"
    target = node.get("_target_") if isinstance(node, dict) else None
    return f"{group} ({target})" if target else group


def data_with(fact: str, data: Any) -> tuple[str, list[str]]:
    """For a message about `data` (a data node) lacking the class fact `fact`: its option name,
    and the data options whose declarations have that fact. Reads every data option's YAML."""
    bodies = option_bodies("data")
    having = [o for o, body in bodies.items() if getattr(_declared(body), fact, None) is not None]
    return _named("data", data, bodies), having


def check_pairing(config: dict[str, Any]) -> None:
    """Refuse, in one line, a config whose task, network or loss cannot take the kind of batch
    its data gives. `config` is the composed config as plain containers, unresolved."""
    data = config.get("data")
    gives = gives_of(data)
    if gives is None:
        return
    for group, node in config.items():
        if group == "data" or fits(node, gives):
            continue
        takes = taken(node) or ()
        datas, bodies = option_bodies("data"), option_bodies(group)
        data_name = _named("data", data, datas)
        fit_data = [o for o, body in datas.items() if gives_of(body) in takes]
        fit_group = [o for o, body in bodies.items() if gives in (taken(body) or ())]
        raise ConfigError(
            f"{_named(group, node, bodies)} takes {_either(takes)}, but {data_name} gives "
            f"{gives}; {group} options that fit {data_name}: {', '.join(fit_group) or 'none'}; "
            f"data options that fit it: {', '.join(fit_data) or 'none'}"
        )


def _either(kinds: tuple[str, ...]) -> str:
    """`a, b or c`."""
    if not kinds:
        return "no kind of data"
    return " or ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)


def missing_key(message: str, reader: str, config: dict[str, Any]) -> str | None:
    """A one-line message for OmegaConf's "Interpolation key 'data.vocab_size' not found", read
    by the config key `reader`: which option lacks the key and which options have it. None
    when the key's first part is not a config group."""
    found = _MISSING_KEY.search(message)
    if found is None or not (config_dir() / found.group(1)).is_dir():
        return None
    group, key = found.groups()
    bodies = option_bodies(group)
    having = [o for o, body in bodies.items() if key in option_keys(body)]
    return (
        f"{reader} reads {group}.{key}, which {_named(group, config.get(group), bodies)} does "
        f"not have; {group} options that have it: {', '.join(having) or 'none'}"
    )
