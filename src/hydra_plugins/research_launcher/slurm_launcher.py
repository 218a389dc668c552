"""Hydra's submitit SLURM launcher, taking each job's result from its first task (rank zero).

A job of several tasks (DDP over nodes) records its run from rank zero alone. The stock launcher
asks every task for a result, so a task that died with its node raises out of the whole sweep
while the sweep's other jobs still run, and no sweep summary is written. Here the launcher waits
for every task of every job, as before, and reads rank zero's result only; the run's
metrics.json says what happened to it.

Each submission is tried with `sbatch --test-only` first: what SLURM refuses, or could never
schedule (more CPUs or memory than any node has, which a cluster without EnforcePartLimits would
queue for ever), ends the command in one line with exit status 2, nothing queued.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

from research import compat


class RankZeroSlurmLauncher(SlurmLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        from submitit.core.utils import FailedJobError

        with compat.apply_patches("slurm_launch"):
            try:
                return super().launch(job_overrides, initial_job_idx)
            except FailedJobError as err:
                refusal = str(err).strip()
                if not refusal.startswith("sbatch:"):
                    raise
                # A setting the cluster cannot take (partition, memory, gres): one line and
                # exit 2, as for any config mistake; no job was queued.
                reasons = "; ".join(
                    line.removeprefix("sbatch: error: ") for line in refusal.splitlines()
                )
                print(
                    f"launcher: error: sbatch refused the jobs: {reasons}; see the "
                    "hydra.launcher.* settings (docs/pages/cluster.md)",
                    file=sys.stderr,
                )
                raise SystemExit(2) from None
