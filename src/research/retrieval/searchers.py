"""Build a searcher by kind, or load a saved one: the registry over every backend.

Each backend is one module (exact.py, voyager.py) that imports nothing from here; a kind's class
is the first `targets` entry of its declaration in `SEARCH_CONFIGS`, imported on first use, so
building an exact searcher never imports voyager (an optional dependency).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from research.retrieval.configs import SEARCH_CONFIGS
from research.retrieval.exact import ExactSearcher, read_manifest


def searcher_class(kind: str) -> type[ExactSearcher]:
    """The class that implements searcher `kind` (exact, voyager or plaid)."""
    if kind not in SEARCH_CONFIGS:
        kinds = ", ".join(SEARCH_CONFIGS)
        raise ValueError(f"unknown searcher kind {kind!r}; valid kinds: {kinds}")
    module, _, name = SEARCH_CONFIGS[kind].targets[0].rpartition(".")
    return getattr(import_module(module), name)


def build_searcher(kind: str, **params: Any) -> ExactSearcher:
    """A new, empty searcher of `kind` with its declared parameters `params`."""
    return searcher_class(kind)(**params)


def load_searcher(path: str | Path) -> ExactSearcher:
    """The searcher saved in `path`, of whichever kind its manifest names."""
    folder = Path(path)
    return searcher_class(read_manifest(folder)["kind"]).load(folder)
