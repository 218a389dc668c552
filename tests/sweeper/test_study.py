"""The search study's sampler, pruner and seed on resume, with a real Optuna study in SQLite."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from hydra_plugins.research_sweeper._study import (
    INTERRUPTED_ATTR,
    build_pruner,
    build_sampler,
    check_identity,
    command_line_space,
    counted_trials,
    fail_interrupted,
    grid_done,
    search_sampler,
)
from research.config.errors import ConfigError

PARAMS = {
    "optimizer.lr": "tag(log, interval(1e-4, 1e-1))",
    "model.net.dropout": "interval(0.0, 0.5)",
}


def _suggest(trial: optuna.Trial) -> tuple[float, float]:
    return (
        trial.suggest_float("optimizer.lr", 1e-4, 1e-1, log=True),
        trial.suggest_float("model.net.dropout", 0.0, 0.5),
    )


def _draw(storage: str, seed: int | None, n: int) -> list[tuple[float, float]]:
    """Load (or create) the study, give it the sampler a (re)start gets, run n trials."""
    study = optuna.create_study(study_name="s", storage=storage, load_if_exists=True)
    study.sampler = search_sampler({"name": "tpe"}, PARAMS, seed)
    drawn = []
    for _ in range(n):
        trial = study.ask()
        point = _suggest(trial)
        study.tell(trial, point[1])
        drawn.append(point)
    return drawn


@pytest.mark.slow
def test_a_resumed_study_draws_new_trials(tmp_path: Path):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    first = _draw(storage, 0, 3)
    resumed = _draw(storage, 0, 3)
    assert len(set(first + resumed)) == 6
    # Reproducible: the same history gives the same draws.
    assert _draw(f"sqlite:///{tmp_path / 'again.db'}", 0, 6) == first + resumed
    # What the sweeper once did: the same seed on every start replays the first trials.
    replay = f"sqlite:///{tmp_path / 'replay.db'}"
    sampler = {"name": "tpe"}
    study = optuna.create_study(study_name="s", storage=replay)
    drawn = []
    for _ in range(2):
        study.sampler = build_sampler(sampler, PARAMS, 0)
        drawn.append(_suggest(study.ask()))
    assert drawn[0] == drawn[1]


def test_samplers_and_pruners_from_config():
    assert isinstance(build_sampler({"name": "random"}, PARAMS, 1), optuna.samplers.RandomSampler)
    cmaes = build_sampler({"name": "cmaes", "n_startup_trials": 2}, PARAMS, 1)
    assert isinstance(cmaes, optuna.samplers.CmaEsSampler)
    tpe = build_sampler({"name": "tpe", "n_startup_trials": 4}, PARAMS, 1)
    assert tpe._n_startup_trials == 4  # noqa: SLF001
    grid = build_sampler({"name": "grid"}, {"a": "choice(1, 2)", "b": "range(0, 3)"}, 1)
    assert isinstance(grid, optuna.samplers.GridSampler)
    with pytest.raises(ConfigError, match=r"sampler grid needs a finite space: optimizer.lr="):
        build_sampler({"name": "grid"}, PARAMS, 1)
    with pytest.raises(ConfigError, match=r"sampler.name=bayes: choose one of: tpe, random"):
        build_sampler({"name": "bayes"}, PARAMS, 1)
    median = build_pruner({"name": "median", "n_startup_trials": 2, "n_warmup_steps": 1})
    assert isinstance(median, optuna.pruners.MedianPruner)
    assert isinstance(build_pruner({"name": "none"}), optuna.pruners.NopPruner)
    threshold = build_pruner({"name": "threshold", "lower": 0.2, "n_warmup_steps": 1})
    assert isinstance(threshold, optuna.pruners.ThresholdPruner)
    with pytest.raises(ConfigError, match=r"threshold needs pruner.lower or pruner.upper"):
        build_pruner({"name": "threshold", "lower": None, "upper": None})
    with pytest.raises(ConfigError, match=r"pruner.name=early: choose one of: none, median"):
        build_pruner({"name": "early"})


def test_interrupted_trials_fail_without_counting_and_a_grid_ends_with_its_grid(tmp_path: Path):
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 'db'}")
    study.sampler = build_sampler({"name": "grid"}, {"a": "choice(1, 2, 3)"}, 0)

    def ask() -> optuna.Trial:
        trial = study.ask()
        trial.suggest_categorical("a", [1, 2, 3])  # as the sweeper's job would
        return trial

    study.tell(ask(), state=optuna.trial.TrialState.FAIL)  # its own run failed: counts
    stopped = ask()
    fail_interrupted(study, [stopped.number], "interrupted by SIGINT")
    assert study.trials[1].state == optuna.trial.TrialState.FAIL
    assert study.trials[1].user_attrs[INTERRUPTED_ATTR] == "interrupted by SIGINT"
    assert counted_trials(study) == 1 and not grid_done(study)
    study.tell(ask(), 0.5)
    # The stopped trial never evaluated its point: the grid is not done until one has.
    assert counted_trials(study) == 2 and not grid_done(study)
    retried = ask()
    assert retried.params == stopped.params
    study.tell(retried, 0.7)  # Optuna's own grid sampler raises here (Study.stop)
    assert counted_trials(study) == 3 and grid_done(study)
    evaluated = [t.params["a"] for t in study.trials if t.number != stopped.number]
    assert sorted(evaluated) == [1, 2, 3]


def test_a_study_refuses_another_config(tmp_path: Path):
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 'db'}")
    check_identity(study, {"trainer.max_epochs": 3, "model.net.width": 8}, "db")
    study.tell(study.ask(), 0.5)
    check_identity(study, {"trainer.max_epochs": 3, "model.net.width": 8}, "db")
    with pytest.raises(ConfigError, match=r"trainer.max_epochs \(study: 3, now: 1\); run with"):
        check_identity(study, {"trainer.max_epochs": 1, "model.net.width": 8}, "db")


def test_the_command_lines_sweeps_take_the_place_of_the_files_space_for_their_keys():
    fixed, space = command_line_space(
        ["trainer.max_epochs=2", "optimizer.lr=interval(0.01,0.1)", "model=cnn,mlp", "seed=3"],
        PARAMS,
    )
    assert fixed == ["trainer.max_epochs=2", "seed=3"]
    assert space == {
        "optimizer.lr": "interval(0.01,0.1)",
        "model.net.dropout": "interval(0.0, 0.5)",
        "model": "cnn,mlp",
    }
