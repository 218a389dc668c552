"""Two `research-train -m hparams_search=optuna` commands run at once on one study, as the docs
say to run N workers: each a process of its own, started together on a new study."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import optuna
import pytest

from tests.helpers import search
from tests.helpers.cli import FAST, run_cli

N_TRIALS = 6
WORKER = [
    "-m",
    "hparams_search=optuna",
    *FAST,
    "logger=none",
    "trainer.max_epochs=1",
    f"hydra.sweeper.n_trials={N_TRIALS}",
    # One continuous and one two-valued parameter: a repeated pair is a repeated draw.
    "hydra.sweeper.params={optimizer.lr: 'tag(log, interval(1e-4, 1e-1))', "
    "optimizer.weight_decay: 'choice(0.0, 0.001)'}",
]


@pytest.mark.slow
def test_two_workers_on_one_new_study_draw_distinct_trials(workdir: Path):
    with ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(run_cli, "research-train", *WORKER, cwd=workdir, subprocess=True)
            for _ in range(2)
        ]
        done = [run.result() for run in runs]
    for worker in done:
        assert worker.returncode == 0, worker.stderr[-3000:]
        assert "Traceback" not in worker.stderr
    # Both worked on the study: each left a sweep folder with trials of its own.
    sweeps = search.sweeps(workdir)
    assert len(sweeps) == 2
    assert all(any(sweep.glob("*/metrics.json")) for sweep in sweeps)

    # The budget is the study's, exactly: two workers that ask for the last trial at the same
    # moment leave it to the first (the other's is withdrawn unrun, uncounted).
    trials = [t for t in search.study(workdir).trials if t.params]
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * N_TRIALS
    drawn = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(drawn)) == len(drawn), drawn
    assert sorted(search.trial_runs(workdir)) == [t.number for t in trials]
