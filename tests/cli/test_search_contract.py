"""Hydra's Optuna plugin's contract through the real CLI: fixed values, float ranges, shuffles and
a `custom_search_space` hook in one search; a multi-objective search with its Pareto front written,
printed and reported; and a space or setting that cannot work refused in one line before any
study or trial is written."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
import yaml

from tests.helpers import search
from tests.helpers.cli import FAST, run_cli

SEARCH = ["-m", "hparams_search=optuna", *FAST, "logger=none"]
HOOK = '''
def space(cfg, trial):
    """As in Hydra's docs: a bound from the config and from a param already drawn."""
    top = 1 if trial.params["optimizer.lr"] < 0.0025 else int(cfg.trainer.max_epochs)
    trial.suggest_int("trainer.max_epochs", 1, top)
'''


@pytest.mark.slow  # a search of two trials: about 6 s
def test_fixed_values_float_ranges_shuffles_and_a_hook_as_in_hydras_plugin(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
):
    (workdir / "search_hook.py").write_text(HOOK)
    monkeypatch.syspath_prepend(str(workdir))
    done = run_cli(
        "research-train",
        *SEARCH,
        "model.net.dropout=0.1",  # searched by the default space: now fixed
        "optimizer.lr=range(0.001,0.003,step=0.001)",  # a float range, its stop included
        "seed=shuffle(range(0,3))",  # a categorical
        "hydra.sweeper.custom_search_space=search_hook.space",
        "hydra.sweeper.n_trials=2",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    trials = search.study(workdir).trials
    runs = search.trial_runs(workdir)
    for trial in trials:
        assert trial.state == optuna.trial.TrialState.COMPLETE
        assert "model.net.dropout" not in trial.params
        assert trial.params["optimizer.lr"] in (0.001, 0.002, 0.003)
        assert isinstance(trial.distributions["seed"], optuna.distributions.CategoricalDistribution)
        assert trial.distributions["seed"].choices == (0, 1, 2)
        top = 1 if trial.params["optimizer.lr"] < 0.0025 else 2
        assert trial.distributions["trainer.max_epochs"].high == top
        config = yaml.safe_load(
            (Path(runs[trial.number]["run_dir"]) / ".hydra" / "config.yaml").read_text()
        )
        assert config["model"]["net"]["dropout"] == 0.1
        assert config["optimizer"]["lr"] == trial.params["optimizer.lr"]
        assert config["seed"] == trial.params["seed"]
        assert config["trainer"]["max_epochs"] == trial.params["trainer.max_epochs"]


@pytest.mark.slow  # a search of three trials and a report: about 8 s
def test_a_multi_objective_search_writes_prints_and_reports_its_pareto_front(workdir: Path):
    done = run_cli(
        "research-train",
        *SEARCH,
        "trainer.max_epochs=1",
        "hydra.sweeper.direction=[maximize,minimize]",
        "hydra.sweeper.objectives=[val/acc,final.val/loss]",
        "hydra.sweeper.sampler.name=random",
        "hydra.sweeper.n_trials=3",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    study = search.study(workdir)
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    runs = search.trial_runs(workdir)
    for trial in study.trials:
        record = runs[trial.number]
        assert trial.values == [record["best"]["val/acc"], record["final"]["val/loss"]]

    (sweep,) = search.sweeps(workdir)
    results = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert results["directions"] == ["maximize", "minimize"]
    assert results["objectives"] == ["val/acc", "final.val/loss"]
    front = {t.number: t for t in study.best_trials}
    assert [s["trial"] for s in results["solutions"]] == sorted(front)
    for solution in results["solutions"]:
        trial = front[solution["trial"]]
        assert solution["params"] == trial.params and solution["values"] == trial.values
        assert solution["run_dir"] == runs[trial.number]["run_dir"]
    assert "Pareto front of study 'train_cnn_digits' (val/acc max, final.val/loss min): " in (
        done.stdout
    )
    assert done.stdout.count("  trial ") == len(front)

    report = run_cli("research-report", str(sweep), cwd=workdir)
    assert report.returncode == 0, report.stderr[-2000:]
    section = report.stdout.split("## Pareto front of study `train_cnn_digits`", 1)[1]
    assert "(`val/acc` maximize, `final.val/loss` minimize)" in section.splitlines()[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    assert [int(r.split("|")[1]) for r in rows] == sorted(front)
    assert section in (sweep / "report" / "report.md").read_text()


TWO = ["hydra.sweeper.objectives=[val/acc,val/loss]", "hydra.sweeper.direction=[maximize,minimize]"]
REFUSALS = [
    # Distributions that cannot be built, from the search's own params.
    (
        ["hydra.sweeper.params={model.net.dropout: 'shuffle(range(3,3))'}"],
        "shuffle(range(...)) holds no value",
    ),
    (
        ["hydra.sweeper.params={model.net.dropout: 'range(0.5,0.0,step=0.25)'}"],
        "the range starts above its end",
    ),
    (
        ["hydra.sweeper.params={optimizer.lr: 'tag(log, range(0.001,0.1,step=0.001))'}"],
        "a log-scale range takes integers with step 1",
    ),
    (
        ["hydra.sweeper.params={optimizer.weight_decay: 'tag(log, choice(0.0, 0.1))'}"],
        "tag(log, ...) takes interval(...) or range(...)",
    ),
    # Several objectives: named, one per direction, without a pruner, not with CMA-ES.
    (["hydra.sweeper.direction=[maximize,minimize]"], "name their metrics in the same order"),
    (
        ["hydra.sweeper.direction=[maximize,minimize]", "hydra.sweeper.objectives=[val/acc]"],
        "names 1 metrics for 2 directions",
    ),
    (
        [*TWO[:1], "hydra.sweeper.direction=[maximize,up]"],
        "direction=[maximize, up]: choose maximize or minimize",
    ),
    ([*TWO, "hydra.sweeper.pruner.name=median"], "Optuna prunes single-objective studies only"),
    ([*TWO, "hydra.sweeper.sampler.name=cmaes"], "cmaes optimizes one objective only"),
    # The hook must be importable; TPE's flags must be booleans that fit together.
    (
        ["hydra.sweeper.custom_search_space=no_such_module.space"],
        "custom_search_space=no_such_module.space: No module named 'no_such_module'",
    ),
    (
        ["hydra.sweeper.sampler.multivariate=maybe"],
        "sampler.multivariate=maybe: give true or false",
    ),
    (["hydra.sweeper.sampler.group=true"], "group=true needs sampler.multivariate=true"),
]


@pytest.mark.parametrize(("args", "expected"), REFUSALS)
def test_a_space_or_setting_that_cannot_work_is_one_line_before_any_study(
    workdir: Path, args: list[str], expected: str
):
    done = run_cli("research-train", *SEARCH, *args, cwd=workdir)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("hparams_search: error: ") and expected in line, line
    assert not (workdir / "logs").exists()  # no study, no sweep folder, no trial


def test_a_hook_that_fails_on_its_first_trial_is_one_line_before_the_study(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
):
    (workdir / "bad_hook.py").write_text("def space(cfg, trial):\n    trial.params['nope']\n")
    monkeypatch.syspath_prepend(str(workdir))
    done = run_cli(
        "research-train", *SEARCH, "hydra.sweeper.custom_search_space=bad_hook.space", cwd=workdir
    )
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "hparams_search: error: hydra.sweeper.custom_search_space=bad_hook.space raised "
        "KeyError: 'nope'"
    )
    assert not (workdir / "logs").exists()  # no study, no sweep folder


def test_pareto_solutions_are_read_back_from_a_sweep_dir(tmp_path: Path):
    from research.reports.pareto import pareto_markdown

    sweep = tmp_path / "multiruns" / "t0"
    sweep.mkdir(parents=True)
    (sweep / "optimization_results.yaml").write_text(
        yaml.safe_dump(
            {
                "study": "s",
                "objectives": ["val/acc", "val/loss"],
                "directions": ["maximize", "minimize"],
                "solutions": [
                    {
                        "trial": 2,
                        "params": {"optimizer.lr": 0.002},
                        "values": [0.9, 0.31],
                        "run_dir": str(sweep / "2_x"),
                    }
                ],
            }
        )
    )
    (tmp_path / "multiruns" / "single").mkdir()
    (tmp_path / "multiruns" / "single" / "optimization_results.yaml").write_text(
        json.dumps({"study": "one", "best_value": 0.5})
    )
    section = pareto_markdown(tmp_path)
    assert "## Pareto front of study `s` (`val/acc` maximize, `val/loss` minimize)" in section
    assert "| 2 | 0.9 | 0.31 | 0.002 | multiruns/t0/2_x |" in section
    assert "`one`" not in section  # a single-objective search has no front
