"""A Hydra sweeper that runs an explicit list of jobs, each its own override list.

Hydra's basic sweeper can only form cartesian products; an ablation is a list of named variants
(each a set of overrides) times seeds, minus the runs already completed. The command line's own
overrides go to every listed job, and a sweep there (`seed=1,2`, `choice()`, `range()`, `glob()`)
is expanded as Hydra's basic sweeper expands it: each listed job runs once per combination, in
the list's order, with the combinations in Hydra's order inside it (research's pre-flight,
`research.config.compose.planned_jobs`, plans the same jobs). The configured Hydra launcher
(basic, joblib, submitit) still launches the jobs, at most `max_batch_size` at a time.
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
        from hydra.core.override_parser.overrides_parser import OverridesParser

        from research import compat

        assert self.launcher is not None and self.hydra_context is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        combinations = compat.hydra_basic_sweep_jobs(parser.parse_overrides(arguments))
        listed = json.loads(self.jobs_file.read_text())
        jobs = [[*combination, *job] for job in listed for combination in combinations]
        self.prepare_sweep_dir()
        size = self.max_batch_size or len(jobs) or 1
        results = []
        for start in range(0, len(jobs), size):
            batch = jobs[start : start + size]
            self.validate_batch_is_legal(batch)
            results.append(self.launcher.launch(batch, initial_job_idx=start))
        return results
