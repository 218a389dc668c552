"""`hydra.sweeper.n_workers`: one command, N worker processes on one shared study (PostgreSQL,
a journal file), a worker killed mid-trial; and every storage that cannot be used refused in one
line before anything is written."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest

from tests.helpers import search
from tests.helpers.cli import FAST, run_cli
from tests.helpers.postgres import fresh_database

State = optuna.trial.TrialState
N_TRIALS = 6
SEARCH = [
    "-m",
    "hparams_search=optuna",
    *FAST,
    "logger=none",
    "trainer.max_epochs=1",
    f"hydra.sweeper.n_trials={N_TRIALS}",
    "hydra.sweeper.study_name=workers",
    # A killed worker's trial is failed and redrawn 5 s after its last sign of life.
    "hydra.sweeper.heartbeat_grace_s=5",
    # One continuous and one two-valued parameter: a repeated pair is a repeated draw.
    "hydra.sweeper.params={optimizer.lr: 'tag(log, interval(1e-4, 1e-1))', "
    "optimizer.weight_decay: 'choice(0.0, 0.001)'}",
]


# A pruner that never prunes: each trial reports to the study through its job's own config, where
# the storage's password is masked.
PRUNER = ["hydra.sweeper.pruner.name=threshold", "hydra.sweeper.pruner.lower=-1"]


@pytest.fixture
def postgres() -> Iterator[str]:
    with fresh_database() as url:
        yield url


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["hydra.sweeper.storage=nosuchdb://host/db"], "unknown storage scheme 'nosuchdb'"),
        (
            [f"hydra.sweeper.storage=postgresql://me:s3cret@127.0.0.1:{_closed_port()}/db"],
            "postgresql://me:***@127.0.0.1:",
        ),
        (["hydra.sweeper.storage=mysql://me:s3cret@127.0.0.1/db"], "the mysql driver is not"),
        (["hydra.sweeper.storage=not a url"], "is not a storage URL"),
        (["hydra.sweeper.n_workers=3", "hydra.sweeper.storage=null"], "needs a storage every"),
        (["hydra.sweeper.n_workers=3", "hydra.sweeper.n_jobs=2"], "give the parallelism as"),
        (["hydra.sweeper.heartbeat_grace_s=0"], "hydra.sweeper.heartbeat_grace_s=0"),
        (["+hydra.sweeper.n_trails=3"], "hydra.sweeper.n_trails is not a setting of the Optuna"),
        (
            ["hydra.sweeper.n_workers=2", "launcher=submitit_local", "hydra.launcher.nodes=2"],
            "set hydra.launcher.tasks_per_node=1 hydra.launcher.nodes=1",
        ),
    ],
)
def test_a_storage_or_worker_setting_that_cannot_work_is_one_line_and_writes_nothing(
    workdir: Path, args: list[str], expected: str
):
    done = run_cli("research-train", "-m", "hparams_search=optuna", *FAST, *args, cwd=workdir)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("hparams_search: error: ") and expected in line, line
    assert "s3cret" not in done.stdout + done.stderr
    assert not (workdir / "logs").exists()


@pytest.mark.slow
@pytest.mark.postgres
def test_three_local_workers_on_postgres_complete_the_budget_despite_a_killed_one(
    workdir: Path, postgres: str
):
    search.check_killed_worker_search(
        workdir, postgres, [*SEARCH, *PRUNER, f"hydra.sweeper.storage={postgres}"]
    )


@pytest.mark.slow
def test_workers_share_a_journal_file_study_without_a_database_server(workdir: Path):
    args = [*SEARCH, "hydra.sweeper.n_trials=4", "hydra.sweeper.n_workers=2"]
    done = run_cli(
        "research-train",
        *args,
        "hydra.sweeper.storage=journal://studies/workers.log",
        cwd=workdir,
        subprocess=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    trials = search.study_at(f"journal://{workdir}/studies/workers.log", "workers").trials
    assert [t.state for t in trials] == [State.COMPLETE] * 4
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 4
    assert done.stdout.count("best trial ") == 1


@pytest.mark.slow  # a search whose workers all fail: about 3.5 s
def test_workers_that_all_fail_to_start_make_the_search_fail(workdir: Path):
    done = run_cli(
        "research-train",
        *SEARCH,
        "hydra.sweeper.n_workers=2",
        "launcher=submitit_local",
        "+hydra.launcher.setup=[exit 3]",  # a broken set-up line: no worker runs a trial
        cwd=workdir,
        subprocess=True,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert sum("hparams_search: warning: worker " in line for line in lines) == 2
    assert lines[-1].startswith("hparams_search: error: every worker ended before the search did")
    assert "(0 of 6 trials count)" in lines[-1]
