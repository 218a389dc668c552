"""Hydra's submitit SLURM launcher, taking each job's result from its first task (rank zero).

A job of several tasks (DDP over nodes) records its run from rank zero alone. The stock launcher
asks every task for a result, so a task that died with its node raises out of the whole sweep
while the sweep's other jobs still run, and no sweep summary is written. Here the launcher waits
for every task of every job, as before, and reads rank zero's result only; the run's
metrics.json says what happened to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

from research import compat


class RankZeroSlurmLauncher(SlurmLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        with compat.submitit_first_task_results():
            return super().launch(job_overrides, initial_job_idx)
