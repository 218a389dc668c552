"""Multirun: one W&B run per job, failures recorded and counted, the sweep's exit code says so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from research.tracking.wandb_reader import read_offline_run
from tests.helpers.cli import BIN, FAST, cli_env, metrics, run_cli, wandb_written

# Each test runs a sweep or shares one (about 7 s on 2 cores).
pytestmark = pytest.mark.slow


def sweep_jobs(root: Path) -> tuple[Path, list[Path]]:
    (sweep,) = (root / "logs" / "train" / "multiruns").glob("*")
    return sweep, sorted((p.parent for p in sweep.glob("*/.hydra")), key=lambda p: int(p.name[0]))


@pytest.fixture(scope="module")
def mixed_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    root = tmp_path_factory.mktemp("sweep")
    # torch.save's format (the command line's check passes it) without a state_dict: the job
    # that resumes from it fails when it loads it.
    torch.save({"weights": torch.zeros(1)}, root / "corrupt.ckpt")
    done = run_cli(
        "research-train",
        "-m",
        *FAST,
        "optimizer=sgd",
        "optimizer.lr=0.01,1e30",
        f"ckpt_path=null,{root / 'corrupt.ckpt'}",
        cwd=root,
        timeout=600,
    )
    wandb_written()
    return done, root


def test_failed_jobs_set_the_exit_code_and_the_summary(mixed_sweep):
    done, root = mixed_sweep
    assert done.returncode == 1, done.stderr[-2000:]
    sweep, jobs = sweep_jobs(root)
    statuses = [metrics(job)["status"] for job in jobs]
    # Hydra varies the last override fastest: (0.01, null), (0.01, corrupt), (1e30, null), ...
    assert statuses == ["completed", "failed", "diverged", "failed"]
    summary = json.loads((sweep / "sweep_summary.json").read_text())
    assert (summary["jobs"], summary["completed"], summary["failed"], summary["diverged"]) == (
        4,
        1,
        2,
        1,
    )
    console = done.stdout + done.stderr
    assert console.count("sweep: 1/4 jobs completed, 2 failed, 1 diverged") == 1, console[-2000:]
    assert "has no state_dict; it is not a Lightning .ckpt" in metrics(jobs[1])["error"]


def test_every_job_has_its_own_wandb_run(mixed_sweep):
    _, root = mixed_sweep
    _, jobs = sweep_jobs(root)
    ids = [metrics(job)["wandb"]["run_id"] for job in jobs]
    assert len(set(ids)) == 4
    for job, run_id in zip(jobs, ids, strict=True):
        logged = read_offline_run(job)
        assert logged.run_id == run_id
        assert logged.exit_code == (0 if metrics(job)["status"] == "completed" else 1)
        assert logged.summary["status"] == metrics(job)["status"]
        # Named by what differs (bookkeeping overrides left out), with the user's command.
        lr, ckpt = metrics(job)["overrides"][-2:]
        assert logged.name == f"debug=limit,optimizer=sgd,{lr},seed=0", ckpt
        assert metrics(job)["command"] == "research-train -m " + " ".join(
            [
                *FAST,
                "optimizer=sgd",
                "optimizer.lr=0.01,1e30",
                f"ckpt_path=null,{root / 'corrupt.ckpt'}",
            ]
        )
        assert logged.config["command"] == metrics(job)["command"]


def test_seed_zero_is_a_real_seed(tmp_path: Path):
    done = run_cli("research-train", "-m", *FAST, "logger=none", "seed=0,1,0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    _, jobs = sweep_jobs(tmp_path)
    first, other, again = (metrics(job) for job in jobs)
    assert first["seed"] == 0 and again["seed"] == 0
    assert first["final"] == again["final"]
    assert first["final"] != other["final"]
    assert first["run_id"] == again["run_id"] != other["run_id"]


def test_a_whole_sweep_syncs_in_one_wandb_command(mixed_sweep):
    """What the README says: one `wandb sync` over the jobs' wandb folders picks up every run
    (a dry run: nothing is uploaded, no network)."""
    _, root = mixed_sweep
    sweep, jobs = sweep_jobs(root)
    folders = sorted(str(p) for p in sweep.glob("*/wandb"))
    done = subprocess.run(
        [str(BIN / "wandb"), "sync", "--dry-run", *folders],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(root),
    )
    assert done.returncode == 0, done.stderr
    assert f"Would sync {len(jobs)} run(s)" in done.stdout + done.stderr
