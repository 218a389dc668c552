"""Which declaration checks a `_target_`, found from the target's own package: a new component
joins no list.

A component declares its parameters in the `configs.py` of its package or of an enclosing one
(`research.models.cnn.CNN` -> `research.models.configs`); that module is imported on first use,
without importing the component itself (which may import torch). What we configure but do not
own (Lightning's Trainer, callbacks and loggers, torch's optimizers, the entry configs' top-level
keys) is declared in `research.config.schemas`.

Targets that moved keep working: a saved run naming an old path loads the new one, and run ids
hash the targets moved after ids were first recorded under their old name, so those runs keep
their ids.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

from research.config.schema import SCHEMAS, Schema

LIBRARY_DECLARATIONS = (
    "research.config.schemas.run",
    "research.config.schemas.lightning",
    "research.config.schemas.optim",
)
# Moved after run ids were first recorded: ids hash them under the old name.
_HASHED_AS = {
    "research.callbacks.progress.ProgressLog": "research.progress.log.ProgressLog",
    "research.callbacks.grad_norms.GradNormLogger": "research.monitoring.grad_norms.GradNormLogger",
}
# Old path -> current path of every target that moved; runs saved before a move name the old one.
MOVED_TARGETS = {
    "research.modules.classification.ClassificationModule": (
        "research.tasks.classification.ClassificationModule"
    ),
    "research.modules.masked_lm.MaskedLMModule": "research.tasks.masked_lm.MaskedLMModule",
    "research.modules.retrieval.RetrievalModule": "research.tasks.retrieval.RetrievalModule",
    "research.data.synthetic.AssociativeRecallDataModule": (
        "research.data.recall.AssociativeRecallDataModule"
    ),
    **{old: new for new, old in _HASHED_AS.items()},
}


def current_target(target: str) -> str:
    """The path a target has now (the same one unless it moved)."""
    return MOVED_TARGETS.get(target, target)


def hashed_target(target: str) -> str:
    """The name a run id hashes a target under."""
    return _HASHED_AS.get(target, target)


def _declaring_modules(target: str) -> list[str]:
    """The `configs` modules that may declare `target`, innermost package first. Found on disk
    from the top-level package's location, so nothing is imported to look (a library's package
    __init__ may import torch)."""
    top, *inner = target.split(".")[:-1] or [""]
    try:
        spec = find_spec(top) if top else None
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec else []
    found = []
    for root in roots:
        folder, package = Path(root), top
        chain = [(folder, package)]
        for part in inner:
            folder, package = folder / part, f"{package}.{part}"
            if not (folder / "__init__.py").is_file():
                break
            chain.append((folder, package))
        found += [
            f"{name}.configs" for path, name in reversed(chain) if (path / "configs.py").is_file()
        ]
    return found


@cache
def _load_library_declarations() -> None:
    for name in LIBRARY_DECLARATIONS:
        import_module(name)


def declaration(target: str) -> type[Schema] | None:
    """The declaration of `target` (a `_target_` or an entry config's `@train` / `@eval`), or
    None when no declaring module has one."""
    _load_library_declarations()
    if target not in SCHEMAS:
        for module in _declaring_modules(target):
            import_module(module)
            if target in SCHEMAS:
                break
    return SCHEMAS.get(target)
