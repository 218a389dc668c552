"""Whether torch.compile is tracing the caller: the transformer then takes paths without module
state or data-dependent branches, which would break its graph."""

from __future__ import annotations

import torch


def compiling() -> bool:
    """True while dynamo traces this call (`torch.compiler.is_compiling`, torch >= 2.3; older
    torch gets the eager paths, which still compile, with graph breaks)."""
    is_compiling = getattr(torch.compiler, "is_compiling", None)
    return bool(is_compiling is not None and is_compiling())
