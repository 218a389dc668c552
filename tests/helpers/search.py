"""Read what a `research-train -m hparams_search=optuna` search leaves behind: its sweep dirs
and its Optuna study."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna


def sweeps(root: Path) -> list[Path]:
    """Multirun folders under `root`, oldest first."""
    return sorted((root / "logs" / "train" / "multiruns").glob("*"))


def study(root: Path) -> optuna.Study:
    """The one study stored under `root`."""
    (db,) = (root / "logs" / "optuna").glob("*.db")
    return optuna.load_study(study_name=db.stem, storage=f"sqlite:///{db}")


def trial_runs(root: Path) -> dict[int, dict[str, Any]]:
    """Each trial's metrics.json, by trial number, over every sweep under `root`."""
    runs = [json.loads(p.read_text()) for s in sweeps(root) for p in s.glob("*/metrics.json")]
    return {r["trial"]: r for r in runs}


def study_at(storage: str, name: str) -> optuna.Study:
    """Study `name` in any storage the search accepts (a database URL, journal://<file>)."""
    from hydra_plugins.research_sweeper._storage import open_storage

    return optuna.load_study(study_name=name, storage=open_storage(storage))


def kill_a_worker_mid_trial(
    storage: str, name: str, root: Path, timeout: float = 300
) -> optuna.trial.FrozenTrial:
    """SIGKILL the worker of the first trial found running with its job folder made (so its run
    has started); that trial, as it was then."""
    import os
    import signal
    import time

    from hydra_plugins.research_sweeper._workers import WORKER_ATTR

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            running = study_at(storage, name).get_trials(states=(optuna.trial.TrialState.RUNNING,))
        except KeyError:  # the study is not created yet
            running = []
        for trial in running:
            folders = [s for s in sweeps(root) if list(s.glob(f"{trial.number}_*/.hydra"))]
            if WORKER_ATTR in trial.user_attrs and folders:
                os.kill(int(trial.user_attrs[WORKER_ATTR]["pid"]), signal.SIGKILL)
                return trial
        time.sleep(0.2)
    raise AssertionError(f"no trial of study {name!r} ran within {timeout} s")


def check_killed_worker_search(
    workdir: Path, storage: str, args: list[str], timeout: float = 600
) -> None:
    """`research-train args` with three workers on `storage` (its study named `workers`); one
    SIGKILLed as it runs a trial. The study must end with exactly its n_trials completed and
    distinct trials, the killed one failed (not counted), the best trial printed once, and the
    storage's password nowhere in what the search wrote."""
    import subprocess

    import yaml

    from hydra_plugins.research_sweeper._study import INTERRUPTED_ATTR
    from hydra_plugins.research_sweeper._workers import WORKER_ATTR
    from tests.helpers.cli import BIN, cli_env

    State = optuna.trial.TrialState
    (n_trials,) = [int(a.split("=")[1]) for a in args if a.startswith("hydra.sweeper.n_trials=")]
    proc = subprocess.Popen(
        [str(BIN / "research-train"), *args, "hydra.sweeper.n_workers=3"],
        cwd=workdir,
        env=cli_env(workdir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        killed = kill_a_worker_mid_trial(storage, "workers", workdir)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The killed trial's job folder has no metrics.json: a failed job, so exit status 1.
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in out + err
    # Named on stderr: as ended, or (where SLURM cannot tell, without accounting) cancelled.
    assert f"(job {killed.user_attrs[WORKER_ATTR]['job_id']}) " in err

    trials = study_at(storage, "workers").trials
    states = [t.state for t in trials]
    assert states.count(State.COMPLETE) == n_trials, [(t.number, t.state) for t in trials]
    # Besides the killed one, only trials withdrawn unrun (two workers asked for the last one
    # at once) did not complete.
    (failed,) = [t for t in trials if t.state != State.COMPLETE and t.params]
    assert failed.number == killed.number and failed.state == State.FAIL
    assert "silent for over" in failed.user_attrs[INTERRUPTED_ATTR]
    withdrawn = [t for t in trials if not t.params]
    assert all("withdrawn" in t.user_attrs[INTERRUPTED_ATTR] for t in withdrawn)
    trials = [t for t in trials if t.params]
    drawn = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(drawn)) == len(drawn), drawn
    # The killed worker and at least one other ran trials (a third may have started late).
    assert len({t.user_attrs[WORKER_ATTR]["pid"] for t in trials}) >= 2
    assert all(0 in t.intermediate_values for t in trials if t.state == State.COMPLETE)

    (sweep,) = sweeps(workdir)
    summary = json.loads((sweep / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["completed"], summary["failed"]) == (n_trials + 1, n_trials, 1)
    assert out.count("best trial ") == 1
    results = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    best = study_at(storage, "workers").best_trial
    assert results["best_trial"] == best.number and results["best_value"] == best.value
    password = storage.split("@")[0].rsplit(":", 1)[1]
    assert results["storage"] == storage.replace(f":{password}@", ":***@")
    written = [
        p for p in (workdir / "logs").rglob("*") if p.is_file() and ".submitit" not in p.parts
    ]
    leaks = [p for p in written if f":{password}@" in p.read_text(errors="replace")]
    assert not leaks and f":{password}@" not in out + err
