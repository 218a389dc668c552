"""`hydra.sweeper.n_workers` under `launcher=submitit_slurm`: the workers are one SLURM job array
on the local cluster (.ci/slurm_cluster.sh), sharing a study in PostgreSQL (.ci/postgres.sh).

Skipped where `sbatch` cannot run jobs or the database server does not answer; with
RESEARCH_REQUIRE_SLURM=1 / RESEARCH_REQUIRE_POSTGRES=1 (as `.ci/run` sets) that is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_search_workers import PRUNER, SEARCH
from tests.helpers import search, slurm
from tests.helpers.postgres import fresh_database

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def postgres(workdir: Path) -> Iterator[str]:
    slurm.require_cluster()
    with fresh_database() as url:
        try:
            yield url
        finally:
            slurm.cancel_jobs(workdir)  # a failed test must not leave its workers queued


@pytest.mark.timeout(1200)
def test_three_workers_as_a_slurm_array_complete_the_budget_despite_a_killed_one(
    workdir: Path, postgres: str
):
    # One CPU per worker (slurm.SLURM): two of the three run side by side on the 2-core node of
    # partition debug, the third when a slot frees (here: when one is killed).
    args = [*SEARCH, *PRUNER, *slurm.SLURM, f"hydra.sweeper.storage={postgres}"]
    search.check_killed_worker_search(workdir, postgres, args, timeout=900)
    # One array of three tasks: <array id>_0 .. _2.
    jobs = slurm.slurm_jobs(slurm.sweep_dir(workdir))
    assert sorted(jobs) == [0, 1, 2] and len({j.split("_")[0] for j in jobs.values()}) == 1, jobs
