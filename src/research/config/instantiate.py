"""Hydra's `instantiate` with every OmegaConf container handed over as a plain list or dict.

Without `_convert_="all"`, a list from the config reaches the object as a ListConfig, and what
the object keeps of it can end up where OmegaConf does not belong: in a checkpoint (an
optimizer's param groups hold its `betas`; torch 2.6 keeps them as given, 2.14 makes them a
tuple), which the weights-only loading of every checkpoint here then refuses, or in a library's
`isinstance(..., list)` check (Lightning 2.4 takes a ListConfig of plugins for one plugin)."""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate


def instantiate_plain(node: Any, **kwargs: Any) -> Any:
    """`instantiate(node, **kwargs)` with `_convert_="all"`."""
    return instantiate(node, **kwargs, _convert_="all")
