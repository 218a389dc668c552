"""Late-interaction scoring, token indexes and IR metrics for ColBERT retrieval.

`build_searcher` and `load_searcher` are importable from here; they load torch on first use
only, so importing this package (e.g. for `research.retrieval.configs`) stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "build_searcher": "research.retrieval.searchers",
    "load_searcher": "research.retrieval.searchers",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
