"""Optuna search (resumable, config-checked, trial numbers, best trial) and the submitit_local
launcher, run for real on tiny configs."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
import yaml

from tests.helpers import search
from tests.helpers.cli import FAST, run_cli

TINY = [*FAST, "logger=none", "trainer.max_epochs=1"]


@pytest.mark.slow
def test_optuna_search_resumes_without_repeating_trials_and_checks_its_config(workdir: Path):
    args = ["-m", "hparams_search=optuna", *TINY]
    first = run_cli("research-train", *args, "hydra.sweeper.n_trials=3", cwd=workdir)
    assert first.returncode == 0, first.stderr[-2000:]
    # The search stopped at 3 trials; the same command with a larger budget resumes it, now
    # with a pruner: each trial reports its monitored val/acc per epoch to the study.
    more = ["hydra.sweeper.n_trials=6", "hydra.sweeper.pruner.name=median"]
    second = run_cli("research-train", *args, *more, cwd=workdir)
    assert second.returncode == 0, second.stderr[-2000:]
    summary = json.loads((search.sweeps(workdir)[-1] / "sweep_summary.json").read_text())
    assert summary["jobs"] == 3 and summary["completed"] + summary["pruned"] == 3

    study = search.study(workdir)
    assert len(study.trials) == 6 and study.direction.name == "MAXIMIZE"
    # A continuous space: a repeated draw would mean the sampler replayed its stream.
    lrs = [t.params["optimizer.lr"] for t in study.trials]
    assert len(set(lrs)) == 6, lrs
    by_trial = search.trial_runs(workdir)
    assert sorted(by_trial) == list(range(6))
    for trial in study.trials:
        run = by_trial[trial.number]
        assert run["overrides"][-1] == f"trial={trial.number}"
        # The pruner (resumed part only) hears val/acc after the one epoch, and may stop it.
        assert list(trial.intermediate_values) == ([0] if trial.number >= 3 else [])
        if trial.state == optuna.trial.TrialState.PRUNED:
            assert trial.number >= 3 and run["status"] == "pruned"
        else:
            assert trial.state == optuna.trial.TrialState.COMPLETE and run["status"] == "completed"
            assert trial.value == run["best"]["val/acc"]

    best = study.best_trial
    results = yaml.safe_load((search.sweeps(workdir)[-1] / "optimization_results.yaml").read_text())
    assert results["best_trial"] == best.number and results["best_value"] == best.value
    assert Path(results["run_dir"]) == Path(by_trial[best.number]["run_dir"])
    assert f"best trial {best.number} of study 'train_cnn_digits'" in second.stdout
    assert f"run dir: {results['run_dir']}; W&B run id: None" in second.stdout

    # Another non-searched config may not join the study.
    other = [a if a != "trainer.max_epochs=1" else "trainer.max_epochs=2" for a in args]
    third = run_cli("research-train", *other, "hydra.sweeper.n_trials=7", cwd=workdir)
    assert third.returncode == 2  # a config mistake, as for any other
    (line,) = [ln for ln in third.stderr.splitlines() if "hparams_search: error" in ln]
    assert "was run with another config: trainer.max_epochs (study: 1, now: 2)" in line
    assert len(search.study(workdir).trials) == 6


SEARCH = "hparams_search: error: "
COMMAND = "research-train: error: "


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["hydra.sweeper.sampler.name=grid"], "sampler grid needs a finite space: optimizer.lr="),
        (["hydra.sweeper.pruner.name=median3"], "hydra.sweeper.pruner.name=median3"),
        (["hydra.sweeper.n_trials=0"], "n_trials=0: give a whole number of trials, >= 1"),
        (["hydra.sweeper.direction=up"], "direction=up: choose maximize or minimize"),
        (["optimizer.lr=interval(0.1,0.01)"], "the interval starts above its end"),
        (["optimizer.lr=tag(log,interval(0,0.1))"], "a log-scale interval needs a start > 0"),
        # The search's own settings are refused before its space's jobs are composed.
        (
            ["hydra.sweeper.n_trials=0", "model.net.dropout=interval(0.1,1.5)"],
            "n_trials=0: give a whole number of trials",
        ),
    ],
)
def test_a_search_config_mistake_writes_no_study_and_no_sweep_folder(
    workdir: Path, args: list[str], expected: str
):
    done = run_cli("research-train", "-m", "hparams_search=optuna", *TINY, *args, cwd=workdir)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(SEARCH) and expected in line
    # An empty study left behind would hold this command's config and refuse the corrected one.
    assert not (workdir / "logs").exists()


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        # The default space's keys exist; an added one is composed like any override.
        (
            "++hydra.sweeper.params={optimizer.nope: 'interval(0.01, 0.1)'}",
            "hydra.sweeper.params: optimizer.nope=0.01: no such key; optimizer has: amsgrad,",
        ),
        # Each choice and each end of an interval is checked against the config's declarations.
        (
            "hydra.sweeper.params={optimizer.lr: 'choice(0.1, -1)'}",
            "hydra.sweeper.params: optimizer.lr=-1.0 is out of range; it must be >= 0.0",
        ),
        ("model.net.dropout=interval(0.1,1.5)", "model.net.dropout=1.5 is out of range"),
        # A range's stop is drawn by trials (as with Hydra's plugin), so it is checked too.
        ("model.net.dropout=range(0.0,1.5,step=0.75)", "model.net.dropout=1.5 is out of range"),
        ("model.top_k=range(5,3)", "model.top_k=range(5,3) sweeps no value"),
        # Hydra merges a new key into the struct params only with ++: say so, not "no such key".
        (
            "hydra.sweeper.params={trainer.max_epochs: 'choice(1, 2)'}",
            "adds a key to the search space, which Hydra merges only as ++hydra.sweeper.params=",
        ),
    ],
)
def test_a_search_space_is_composed_as_its_jobs_would_be_before_anything_is_written(
    workdir: Path, space: str, expected: str
):
    done = run_cli("research-train", "-m", "hparams_search=optuna", *TINY, space, cwd=workdir)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(COMMAND) and expected in line


@pytest.mark.slow  # a search: about 4 s
def test_the_command_line_sweeps_are_the_search_space(workdir: Path):
    """As with Hydra's own Optuna sweeper: a swept key on the command line is searched, in place
    of the file's space for that key, instead of failing each trial's composition."""
    swept = ["optimizer.lr=interval(0.002,0.003)", "model.net.dropout=0.1,0.2"]
    done = run_cli(
        "research-train",
        "-m",
        "hparams_search=optuna",
        *TINY,
        *swept,
        "hydra.sweeper.n_trials=2",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    study = search.study(workdir)
    assert len(study.trials) == 2
    runs = search.trial_runs(workdir)
    for trial in study.trials:
        assert trial.state.name == "COMPLETE"
        assert 0.002 <= trial.params["optimizer.lr"] <= 0.003
        assert trial.params["model.net.dropout"] in (0.1, 0.2)
        assert "optimizer.weight_decay" in trial.params  # the file's space for other keys
        config = yaml.safe_load(
            (Path(runs[trial.number]["run_dir"]) / ".hydra" / "config.yaml").read_text()
        )
        assert config["optimizer"]["lr"] == trial.params["optimizer.lr"]
        assert config["model"]["net"]["dropout"] == trial.params["model.net.dropout"]


@pytest.mark.slow  # a search: about 3 s
def test_fast_dev_run_in_a_search_is_an_objective_not_a_traceback(workdir: Path):
    done = run_cli(
        "research-train",
        "-m",
        "hparams_search=optuna",
        "debug=fdr",
        "hydra.sweeper.n_trials=1",
        "hydra.sweeper.params={optimizer.lr: 'interval(0.001, 0.01)'}",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Record does not exist" not in done.stderr
    (trial,) = search.study(workdir).trials
    assert trial.state.name == "COMPLETE" and 0 <= trial.value <= 1


@pytest.mark.slow
def test_submitit_local_runs_jobs_as_separate_processes(workdir: Path):
    done = run_cli(
        "research-train", "-m", "launcher=submitit_local", "seed=0,1", *TINY, cwd=workdir
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (sweep,) = search.sweeps(workdir)
    statuses = [json.loads(p.read_text()) for p in sorted(sweep.glob("*/metrics.json"))]
    assert [s["status"] for s in statuses] == ["completed", "completed"]
    logs = list((sweep / ".submitit").rglob("*_log.out"))
    assert len(logs) == 2, "each job ran in its own submitit process"
