"""A search through the real CLI: Ctrl-C in the middle of a trial and a rerun that resumes it,
pruning through Lightning, and the CMA-ES and grid samplers. Tiny runs (digits CNN, a few
batches per epoch)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import optuna
import pytest

from hydra_plugins.research_sweeper._study import INTERRUPTED_ATTR
from tests.helpers import search
from tests.helpers.cli import FAST, run_cli
from tests.helpers.signals import signal_when

# Every test runs a whole search (4 to 7 s each on 2 cores, the Ctrl-C one more).
pytestmark = pytest.mark.slow

SEARCH = ["-m", "hparams_search=optuna", *FAST, "logger=none"]
State = optuna.trial.TrialState


def _summary(sweep: Path) -> dict:
    return json.loads((sweep / "sweep_summary.json").read_text())


def test_ctrl_c_in_a_trial_fails_it_and_the_rerun_completes_the_study_with_new_draws(
    workdir: Path,
):
    # Three epochs a trial: the signal goes once trial 1 has logged its first, so it lands
    # while that trial is still training.
    args = [*SEARCH, "trainer.max_epochs=3", "hydra.sweeper.n_trials=2"]

    def trial_1_trains() -> bool:
        return any(workdir.glob("logs/train/multiruns/*/1_*/history.jsonl"))

    stopped = signal_when(workdir, args, signal.SIGINT, trial_1_trains)
    assert stopped.returncode == 130, stopped.stderr[-2000:]
    assert "sweep: stopped by SIGINT" in stopped.stderr
    first = search.study(workdir).trials
    assert [t.state for t in first] == [State.COMPLETE, State.FAIL]  # never left RUNNING
    assert first[1].user_attrs[INTERRUPTED_ATTR] == "interrupted by SIGINT"
    assert search.trial_runs(workdir)[1]["status"] == "interrupted"

    resumed = run_cli("research-train", *args, cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    trials = search.study(workdir).trials
    # The interrupted trial is not one of the 2: the rerun ran one more trial, not zero.
    assert [t.state for t in trials] == [State.COMPLETE, State.FAIL, State.COMPLETE]
    # A continuous space: a repeated set would mean the resumed sampler replayed its stream.
    tried = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(tried)) == 3, tried
    assert _summary(search.sweeps(workdir)[-1])["completed"] == 1
    runs = search.trial_runs(workdir)
    assert [runs[n]["status"] for n in range(3)] == ["completed", "interrupted", "completed"]


def test_a_grid_search_tries_its_grid_once_and_a_threshold_pruner_prunes_through_lightning(
    workdir: Path,
):
    # Grid: 2 epoch budgets x 2 weight decays (n_trials stays at its default, 20). The
    # pruner starts judging at epoch 1, and no accuracy reaches 1.01: every 2-epoch trial is
    # pruned after its second epoch, every 1-epoch trial completes.
    space = (
        "++hydra.sweeper.params={trainer.max_epochs: 'choice(1, 2)', optimizer.weight_decay: "
        "'choice(0.0, 0.001)', optimizer.lr: 'choice(0.003)', model.net.dropout: 'choice(0.1)'}"
    )
    pruner = ["hydra.sweeper.pruner.name=threshold", "hydra.sweeper.pruner.lower=1.01"]
    done = run_cli(
        "research-train",
        *SEARCH,
        "hydra.sweeper.sampler.name=grid",
        space,
        *pruner,
        "hydra.sweeper.pruner.n_warmup_steps=1",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    trials = search.study(workdir).trials
    tried = sorted(
        (t.params["trainer.max_epochs"], t.params["optimizer.weight_decay"]) for t in trials
    )
    assert tried == [(1, 0.0), (1, 0.001), (2, 0.0), (2, 0.001)]
    runs = search.trial_runs(workdir)
    for trial in trials:
        if trial.params["trainer.max_epochs"] == 2:
            assert trial.state == State.PRUNED and list(trial.intermediate_values) == [0, 1]
            assert runs[trial.number]["status"] == "pruned"
        else:
            assert trial.state == State.COMPLETE and runs[trial.number]["status"] == "completed"
    summary = _summary(search.sweeps(workdir)[-1])
    assert (summary["jobs"], summary["completed"], summary["pruned"]) == (4, 2, 2)
    assert "sweep: 2/4 jobs completed, 0 failed, 0 diverged, 2 pruned" in done.stdout


def test_a_cmaes_search_runs_to_completion(workdir: Path):
    # One random start-up trial, then one that CMA-ES proposes (continuous parameters only).
    space = "hydra.sweeper.params={optimizer.weight_decay: 'interval(0.0, 0.001)'}"
    sampler = ["hydra.sweeper.sampler.name=cmaes", "hydra.sweeper.sampler.n_startup_trials=1"]
    args = [*SEARCH, "trainer.max_epochs=1", space, *sampler, "hydra.sweeper.n_trials=2"]
    done = run_cli("research-train", *args, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    trials = search.study(workdir).trials
    assert [t.state for t in trials] == [State.COMPLETE] * 2
    # CMA-ES, not a fallback sampler, drew the trials after the start-up one.
    assert ["cma:generation" in t.system_attrs for t in trials] == [False, True]
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 2
    assert f"best trial {search.study(workdir).best_trial.number} of study" in done.stdout
