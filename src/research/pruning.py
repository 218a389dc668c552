"""Optuna pruning inside a search trial: Optuna's own Lightning callback
(optuna_integration.PyTorchLightningPruningCallback) reports the monitored `val/*` metric every
epoch to the study and stops a trial the study's pruner gives up on.

The trial number comes from the sweeper (`trial=<n>`), the study's storage and pruner from the
job's own Hydra config (`hydra.sweeper`), so this works for jobs in other processes (submitit).
"""

from __future__ import annotations

import sys
from typing import Any


class PruningError(ValueError):
    """A pruner that cannot work as configured."""


def is_pruned(err: BaseException) -> bool:
    """True for Optuna's TrialPruned (without importing optuna where no search runs)."""
    optuna = sys.modules.get("optuna")
    return optuna is not None and isinstance(err, optuna.TrialPruned)


def pruning_callbacks(config: dict[str, Any], monitor: str | None) -> list[Any]:
    """[the pruning callback] for a trial of a study with a pruner; [] otherwise."""
    from hydra.core.hydra_config import HydraConfig

    if config.get("trial") is None or not HydraConfig.initialized():
        return []
    sweeper = HydraConfig.get().sweeper
    pruner_cfg = dict(sweeper.get("pruner") or {})
    if str(pruner_cfg.get("name", "none")) == "none":
        return []
    if not sweeper.get("storage"):
        raise PruningError(
            "hydra.sweeper.pruner needs a study database (hydra.sweeper.storage) so each "
            "trial can report to it; set storage or pruner.name=none"
        )
    if not monitor:
        raise PruningError("pruning needs a monitored metric (callbacks.model_checkpoint.monitor)")
    import optuna
    from optuna_integration import PyTorchLightningPruningCallback

    from hydra_plugins.research_sweeper.study import build_pruner

    study = optuna.load_study(
        study_name=sweeper.study_name, storage=sweeper.storage, pruner=build_pruner(pruner_cfg)
    )
    storage = study._storage  # noqa: SLF001 - the trial's id is only known to the storage
    trial_id = storage.get_trial_id_from_study_id_trial_number(
        study._study_id,  # noqa: SLF001
        int(config["trial"]),
    )
    return [PyTorchLightningPruningCallback(optuna.trial.Trial(study, trial_id), monitor)]
