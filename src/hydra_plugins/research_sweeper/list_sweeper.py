"""A Hydra sweeper that runs an explicit list of jobs, each its own override list.

Hydra's basic sweeper can only form cartesian products; an ablation is a list of named variants
(each a set of overrides) times seeds, minus the runs already completed. The configured Hydra
launcher (basic, joblib, submitit) still launches the jobs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


class ListSweeper(Sweeper):
    def __init__(self, jobs_file: str, max_batch_size: int | None = None) -> None:
        self.jobs_file = Path(jobs_file)
        self.max_batch_size = max_batch_size
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None
        self.hydra_context: HydraContext | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from hydra.core.plugins import Plugins

        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        assert self.config is not None and self.launcher is not None
        jobs = [[*arguments, *job] for job in json.loads(self.jobs_file.read_text())]
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        OverridesParser.create().parse_overrides([o for job in jobs for o in job])
        size = self.max_batch_size or len(jobs) or 1
        results = []
        for start in range(0, len(jobs), size):
            batch = jobs[start : start + size]
            self.validate_batch_is_legal(batch)
            results.append(self.launcher.launch(batch, initial_job_idx=start))
        return results
