"""What both sweepers share: the configured launcher, and the sweep dir's multirun.yaml."""

from __future__ import annotations

from pathlib import Path

from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


class LaunchingSweeper(Sweeper):
    """A sweeper that decides the jobs itself and leaves launching them to Hydra's launcher."""

    config: DictConfig | None = None
    launcher: Launcher | None = None
    hydra_context: HydraContext | None = None
    task_function: TaskFunction | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from hydra.core.plugins import Plugins

        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function  # for search workers in processes of their own
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def prepare_sweep_dir(self) -> Path:
        assert self.config is not None
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        return sweep_dir
