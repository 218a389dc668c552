"""Optuna pruning inside a search trial: Optuna's own Lightning callback
(optuna_integration.PyTorchLightningPruningCallback) reports the monitored `val/*` metric every
epoch to the study and stops a trial the study's pruner gives up on.

`conf/hparams_search/optuna.yaml` adds it to the run's callbacks; the trial number comes from the
sweeper (`trial=<n>`), the study's storage and pruner from the job's own Hydra config
(`hydra.sweeper`), so this works for jobs in other processes (submitit) too. The run itself never
imports this plugin: its config names the callback.
"""

from __future__ import annotations

from typing import Any

from hydra_plugins.research_sweeper.configs import OptunaPruningConfig
from research.config.errors import ConfigError


def optuna_pruning(config: OptunaPruningConfig | None = None, **params: Any) -> Any:
    """The pruning callback of search trial `config.trial` reporting `config.monitor`; a callback
    that does nothing for a run outside a search or a search without a pruner."""
    import lightning as L
    from hydra.core.hydra_config import HydraConfig

    config = OptunaPruningConfig.build(config, params)
    trial, monitor = config.trial, config.monitor
    if trial is None or not HydraConfig.initialized():
        return L.Callback()
    sweeper = HydraConfig.get().sweeper
    pruner_cfg = dict(sweeper.get("pruner") or {})
    if str(pruner_cfg.get("name", "none")) == "none":
        return L.Callback()
    if not sweeper.get("storage"):
        raise ConfigError(
            "hydra.sweeper.pruner needs a study database (hydra.sweeper.storage) so each "
            "trial can report to it; set storage or pruner.name=none"
        )
    if not monitor:
        raise ConfigError("pruning needs a monitored metric (callbacks.model_checkpoint.monitor)")
    import optuna
    from optuna_integration import PyTorchLightningPruningCallback

    from hydra_plugins.research_sweeper._storage import open_storage, real_url
    from hydra_plugins.research_sweeper._study import build_pruner
    from research import compat

    study = optuna.load_study(
        study_name=sweeper.study_name,
        storage=open_storage(real_url(sweeper.storage)),
        pruner=build_pruner(pruner_cfg),
    )
    return PyTorchLightningPruningCallback(compat.optuna_trial(study, int(trial)), monitor)
