"""A Hydra sweeper that runs an explicit list of jobs, each its own override list.

Hydra's basic sweeper can only form cartesian products; an ablation is a list of named variants
(each a set of overrides) times seeds, minus the runs already completed. The configured Hydra
launcher (basic, joblib, submitit) still launches the jobs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra_plugins.research_sweeper.base import LaunchingSweeper


class ListSweeper(LaunchingSweeper):
    def __init__(self, jobs_file: str, max_batch_size: int | None = None) -> None:
        self.jobs_file = Path(jobs_file)
        self.max_batch_size = max_batch_size

    def sweep(self, arguments: list[str]) -> Any:
        assert self.launcher is not None
        jobs = [[*arguments, *job] for job in json.loads(self.jobs_file.read_text())]
        self.prepare_sweep_dir()
        size = self.max_batch_size or len(jobs) or 1
        results = []
        for start in range(0, len(jobs), size):
            batch = jobs[start : start + size]
            self.validate_batch_is_legal(batch)
            results.append(self.launcher.launch(batch, initial_job_idx=start))
        return results
