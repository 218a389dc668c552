"""research: compose experiments from Hydra configs, train them with PyTorch Lightning, track them
in W&B, and reproduce ablations.

The Python API mirrors the command line (see research.api):

    import research
    cfg = research.compose("train", ["model=cnn", "trainer.max_epochs=2"])
    datamodule, module = research.build(cfg)
    run = research.train(cfg)

Importing `research` imports neither torch nor Lightning; `build` and `train` do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Run", "build", "compose", "train"]


def __getattr__(name: str) -> Any:
    """The API lives in research.api, imported on first use (it needs Hydra)."""
    if name in __all__:
        from research import api

        return getattr(api, name)
    raise AttributeError(f"module 'research' has no attribute {name!r}")
