"""Parallel workers on one study, in one process: each opens the study itself (as a separate
`research-train -m hparams_search=optuna` command would), and their asks and tells interleave."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import optuna
import pytest

from hydra_plugins.research_sweeper._heartbeat import ALIVE_ATTR, GRACE_S, beating
from hydra_plugins.research_sweeper._seeding import trial_seed
from hydra_plugins.research_sweeper._study import (
    INTERRUPTED_ATTR,
    fail_abandoned,
    grid_done,
    open_study,
    past_budget,
    search_sampler,
    trials_left,
)

PARAMS = {"optimizer.lr": "tag(log, interval(1e-4, 1e-1))", "model.net.dropout": "choice(0.1)"}
GRID = {"a": "choice(1, 2)", "b": "choice(10, 20)"}
State = optuna.trial.TrialState


def _worker(storage: str, sampler: dict, params: dict[str, str], seed: int) -> optuna.Study:
    """A worker's view of the study: opened on its own, with the sampler a search gets."""
    study = open_study("s", storage, "minimize", optuna.pruners.NopPruner())
    study.sampler = search_sampler(sampler, params, seed)
    return study


def _interleaved(storage: str, sampler: str, rounds: int) -> list[float]:
    """Two workers that open the study before either has a trial, each asking while the
    other's trial runs: the learning rates they draw, in trial order."""
    a, b = (_worker(storage, {"name": sampler}, PARAMS, seed=0) for _ in range(2))
    for _ in range(rounds):
        ta = a.ask()
        ta.suggest_float("optimizer.lr", 1e-4, 1e-1, log=True)
        tb = b.ask()
        tb.suggest_float("optimizer.lr", 1e-4, 1e-1, log=True)
        a.tell(ta, 0.5)
        b.tell(tb, 0.5)
    return [t.params["optimizer.lr"] for t in a.trials]


@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes"])
@pytest.mark.slow
def test_workers_on_one_study_draw_distinct_trials_reproducibly(sampler: str, tmp_path: Path):
    lrs = _interleaved(f"sqlite:///{tmp_path / 'one.db'}", sampler, rounds=3)
    # Seeded once per worker from the same seed and trial count, both drew the same stream.
    assert len(set(lrs)) == 6, lrs
    assert _interleaved(f"sqlite:///{tmp_path / 'two.db'}", sampler, rounds=3) == lrs
    assert trial_seed(7, 3) == trial_seed(7, 3) != trial_seed(7, 4)


def test_grid_workers_never_run_one_point_twice(tmp_path: Path):
    def ask(study: optuna.Study) -> optuna.Trial:
        trial = study.ask()
        trial.suggest_categorical("a", [1, 2])
        trial.suggest_categorical("b", [10, 20])
        return trial

    storage = f"sqlite:///{tmp_path / 'grid.db'}"
    a = _worker(storage, {"name": "grid"}, GRID, seed=0)
    a.tell(ask(a), 0.0)  # a has run a trial before b starts: both must share the grid's order
    b = _worker(storage, {"name": "grid"}, GRID, seed=0)
    ta, tb = ask(a), ask(b)
    a.tell(ta, 0.0)
    tc = ask(a)
    a.tell(tc, 0.0)
    # Every point is finished or running in b: a has nothing left, rather than b's point again.
    assert grid_done(a)
    b.tell(tb, 0.0)
    points = [(t.params["a"], t.params["b"]) for t in a.trials]
    assert sorted(points) == [(1, 10), (1, 20), (2, 10), (2, 20)]


def _open_at_once(storage: str, n: int) -> tuple[list[str], list[BaseException]]:
    """`n` threads opening one study at the same moment: the names opened, the errors."""
    start = threading.Barrier(n)
    opened: list[str] = []
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        try:
            opened.append(open_study("s", storage, "minimize", None).study_name)
        except Exception as err:  # noqa: BLE001 - the test reports it
            errors.append(err)

    workers = [threading.Thread(target=open_it) for _ in range(n)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return opened, errors


@pytest.mark.slow  # starts worker processes together: about 2.5 s
def test_workers_creating_one_new_study_at_once_all_open_it(tmp_path: Path):
    # A bare optuna.create_study(load_if_exists=True) loses this race in nearly every round
    # ("table studies already exists", a duplicate alembic_version row).
    for attempt in range(3):
        opened, errors = _open_at_once(f"sqlite:///{tmp_path / f'new{attempt}.db'}", 4)
        assert not errors and opened == ["s"] * 4
        assert len(optuna.get_all_study_names(f"sqlite:///{tmp_path / f'new{attempt}.db'}")) == 1


def test_a_worker_fails_abandoned_trials_only_and_counts_running_ones(tmp_path: Path):
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 'db'}")
    live, _fresh, dead = study.ask(), study.ask(), study.ask()
    live.set_user_attr(ALIVE_ATTR, time.time())  # another worker runs it
    # fresh: just asked, not stamped yet; dead: its worker's last sign of life is long past.
    dead.set_user_attr(ALIVE_ATTR, time.time() - GRACE_S - 1)
    fail_abandoned(study)
    states = [t.state for t in study.trials]
    assert states == [State.RUNNING, State.RUNNING, State.FAIL]
    assert INTERRUPTED_ATTR in study.trials[2].user_attrs
    # Two trials are running elsewhere: of 5, 3 are left to start (the failed one is redrawn).
    assert trials_left(study, 5) == 3


def test_beating_keeps_stamping_until_the_block_ends(tmp_path: Path):
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 'db'}")
    trial = study.ask()
    with beating([trial], interval_s=0.05):
        first = study.trials[0].user_attrs[ALIVE_ATTR]
        time.sleep(0.3)
        assert study.trials[0].user_attrs[ALIVE_ATTR] > first
    study.tell(trial, 0.0)  # the heartbeat stopped: it cannot touch a finished trial
    last = study.trials[0].user_attrs[ALIVE_ATTR]
    time.sleep(0.15)
    assert study.trials[0].user_attrs[ALIVE_ATTR] == last


def test_workers_asking_for_the_last_trial_at_once_leave_it_to_the_first(tmp_path: Path):
    storage = f"sqlite:///{tmp_path / 'db'}"
    a, b = (_worker(storage, {"name": "random"}, PARAMS, seed=0) for _ in range(2))
    for _ in range(2):
        a.tell(a.ask(), 0.0)
    # A budget of 3 with 2 counted: both workers see one trial left and ask for it.
    assert trials_left(a, 3) == trials_left(b, 3) == 1
    first, second = a.ask(), b.ask()
    assert past_budget(b, [second.number], 3) == [second.number]
    assert past_budget(a, [first.number], 3) == []
