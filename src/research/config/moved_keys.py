"""Config keys that moved, and what becomes of their old place.

A key the run applies itself (a setting of torch, not an argument of the class a node names) sits
outside every `_target_` node, so that Hydra's own `instantiate` builds each node of a composed
config as it is. Keys that once sat under such a node keep working where a run saved them: a
saved run's config is read with the key at its new place, and run ids hash it at the old one, so
a run keeps its id. On the command line the old place is refused in one line that names the new
one (Hydra would add the key to the node, and the node would no longer instantiate).
"""

from __future__ import annotations

from typing import Any

# Old dotted path -> new dotted path. A moved key's default (null) leaves it out of a run's id.
MOVED_KEYS = {
    # torch.set_float32_matmul_precision: a process-wide torch setting that the run applies
    # for its job; lightning.pytorch.Trainer takes no such argument.
    "trainer.float32_matmul_precision": "float32_matmul_precision",
}


def moved_key_hint(key: str, line: str | None = None) -> str | None:
    """One line for `key` (an old place, e.g. from the override `line`) naming its new place;
    None when `key` did not move."""
    new = MOVED_KEYS.get(key.lstrip("+~"))
    if new is None:
        return None
    old = key.lstrip("+~")
    value = line.partition("=")[2] if line and "=" in line else ""
    if line and line.startswith("~"):
        value = "null"  # what removing it meant: torch's default
    node = old.rpartition(".")[0]
    return (
        f"{f'{line}: ' if line else ''}{old} moved to {new} (the run applies it itself, and "
        f"{node}'s _target_ takes no such argument); "
        + (f"write {new}={value}" if value else f"set {new} instead")
    )


def _pop(node: dict[str, Any], path: str) -> tuple[bool, Any]:
    """Remove `path` (dotted) from nested dicts `node`; (found, value)."""
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None  # type: ignore[assignment]
    if not isinstance(node, dict) or leaf not in node:
        return False, None
    return True, node.pop(leaf)


def _put(node: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            return
    node[leaf] = value


def at_new_places(config: Any) -> None:
    """Move, in place, every moved key of `config` (a run's saved config: an OmegaConf
    DictConfig or plain dicts) from its old place to its new one, which it gets (null) even
    when the run never set it, so an evaluation's override can set it. A value at the new place
    wins over one at the old."""
    from omegaconf import DictConfig, OmegaConf, open_dict

    for old, new in MOVED_KEYS.items():
        parent, _, leaf = old.rpartition(".")
        if isinstance(config, DictConfig):
            holder = OmegaConf.select(config, parent) if parent else config
            value = None
            if isinstance(holder, DictConfig) and leaf in holder:
                with open_dict(holder):
                    value = holder.pop(leaf)
            with open_dict(config):
                if OmegaConf.select(config, new, default=None) is None:
                    OmegaConf.update(config, new, value, force_add=True)
        else:
            _, value = _pop(config, old)
            found, current = _pop(config, new)
            _put(config, new, current if found and current is not None else value)


def at_old_places(content: dict[str, Any]) -> None:
    """Put, in place, every moved key of `content` (a run's identity content, plain dicts) back
    where run ids first hashed it, and leave it out at its default (null): ids stay those of the
    runs saved before it moved, and a run that sets it hashes as one that set the old key."""
    for old, new in MOVED_KEYS.items():
        _, before = _pop(content, old)
        _, now = _pop(content, new)
        value = now if now is not None else before
        if value is not None:
            _put(content, old, value)
