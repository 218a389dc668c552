"""The parameters of the search plugin's run-side callback, declared once and torch-free.

No `from __future__ import annotations` here: Hydra's plugin scan executes this module before it
is in sys.modules, where a dataclass cannot resolve string annotations."""

from dataclasses import dataclass

from research.config.schema import Schema


@dataclass
class OptunaPruningConfig(Schema):
    """Reports a search trial's monitored metric to its study every epoch (hparams_search)."""

    targets = ("hydra_plugins.research_sweeper._pruning.optuna_pruning",)
    trial: int | None = None
    """The trial number the sweeper gave this run (null outside a search: the callback is idle)."""
    monitor: str | None = None
    """The metric reported to the study: the checkpoint's monitored one."""
