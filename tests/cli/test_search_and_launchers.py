"""Optuna search (resumable) and the submitit_local launcher, run for real on tiny configs."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import yaml

from tests.helpers.cli import FAST, run_cli

TINY = [*FAST, "logger=none", "trainer.max_epochs=1"]


def _sweeps(root: Path) -> list[Path]:
    return sorted((root / "logs" / "train" / "multiruns").glob("*"))


def test_optuna_search_optimises_the_best_checkpoint_metric_and_resumes(workdir: Path):
    args = ["-m", "hparams_search=optuna", *TINY]
    first = run_cli("research-train", *args, "hydra.sweeper.n_trials=2", cwd=workdir)
    assert first.returncode == 0, first.stderr[-2000:]
    second = run_cli("research-train", *args, "hydra.sweeper.n_trials=3", cwd=workdir)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "sweep: 1/1 jobs completed" in second.stdout  # resumed: one trial was missing

    (db,) = (workdir / "logs" / "optuna").glob("*.db")
    study = optuna.load_study(study_name=db.stem, storage=f"sqlite:///{db}")
    assert len(study.trials) == 3 and study.direction.name == "MAXIMIZE"
    scores = [
        json.loads(p.read_text())["best"]["val/acc"]
        for sweep in _sweeps(workdir)
        for p in sweep.glob("*/metrics.json")
    ]
    assert sorted(t.value for t in study.trials) == sorted(scores)
    results = yaml.safe_load((_sweeps(workdir)[-1] / "optimization_results.yaml").read_text())
    assert results["best_value"] == max(scores)
    assert set(results["best_params"]) == {
        "optimizer.lr",
        "model.net.dropout",
        "optimizer.weight_decay",
    }


def test_submitit_local_runs_jobs_as_separate_processes(workdir: Path):
    done = run_cli(
        "research-train", "-m", "launcher=submitit_local", "seed=0,1", *TINY, cwd=workdir
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (sweep,) = _sweeps(workdir)
    statuses = [json.loads(p.read_text())["status"] for p in sorted(sweep.glob("*/metrics.json"))]
    assert statuses == ["completed", "completed"]
    logs = list((sweep / ".submitit").rglob("*_log.out"))
    assert len(logs) == 2, "each job ran in its own submitit process"
