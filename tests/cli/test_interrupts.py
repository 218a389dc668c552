"""Ctrl-C, SIGTERM and SIGHUP end a run with a record, a resumable checkpoint and 128 + signal."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest
import torch

from research.tracking.wandb_reader import read_offline_run
from tests.helpers.cli import metrics, run_cli, run_dirs
from tests.helpers.signals import signal_after_epochs

# Short epochs: the signal lands in the middle of training, after a checkpoint exists.
LONG = [
    "trainer.max_epochs=6",
    "trainer.limit_train_batches=5",
    "trainer.limit_val_batches=2",
    "trainer.limit_test_batches=2",
    "trainer.enable_progress_bar=false",
    "trainer.enable_model_summary=false",
]


def _check_interrupted(done, run: Path, signum: int) -> dict:
    name = signal.Signals(signum).name
    assert done.returncode == 128 + signum, done.stderr[-2000:]
    m = metrics(run)
    assert m["status"] == "interrupted" and m["signal"] == name
    assert m["error"] == f"interrupted by {name}"
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("research-train:")]
    assert f"interrupted by {name}; resume with: research-train" in line
    assert "ckpt_path=last" in line
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
    assert last["research"]["run_id"] == m["run_id"]
    return m


@pytest.mark.slow  # a real process, signalled, then resumed and evaluated: about 12 s
def test_sigterm_is_recorded_and_the_moved_run_resumes_and_evaluates_its_best(workdir: Path):
    done = signal_after_epochs(workdir, LONG, signal.SIGTERM, rows=2)
    (run,) = run_dirs(workdir)
    m = _check_interrupted(done, run, signal.SIGTERM)
    assert read_offline_run(run).exit_code == 128 + signal.SIGTERM  # W&B run finished, failed

    # A run dir moved elsewhere under the log root resumes with its checkpoint bookkeeping.
    moved = run.parent.parent / "moved" / run.name
    shutil.move(run, moved)
    resumed = run_cli(
        "research-train", *LONG, "trainer.max_epochs=4", "ckpt_path=last", cwd=workdir
    )
    assert resumed.returncode == 2  # another config: max_epochs differs (no such run)
    resumed = run_cli("research-train", *LONG, "ckpt_path=last", cwd=workdir, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    done_m = metrics(moved)
    assert done_m["status"] == "completed" and done_m["run_id"] == m["run_id"]
    assert sorted(p.name for p in (moved / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]
    assert done_m["best"]["checkpoint"] == "checkpoints/best.ckpt"
    epochs = [json.loads(ln)["epoch"] for ln in (moved / "history.jsonl").read_text().splitlines()]
    assert epochs == list(range(6))

    # research-eval tests exactly the checkpoint metrics.json names, with its score.
    evaluated = run_cli("research-eval", f"run_dir={moved}", cwd=workdir)
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    assert metrics(evaluation)["final"]["test/acc"] == pytest.approx(done_m["best"]["test/acc"])


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP])
def test_ctrl_c_and_sighup_are_recorded_like_sigterm(workdir: Path, signum: int):
    done = signal_after_epochs(workdir, [*LONG, "logger=none"], signum, rows=2)
    (run,) = run_dirs(workdir)
    _check_interrupted(done, run, signum)


@pytest.mark.slow
def test_a_sigterm_stops_a_multirun_and_records_the_jobs_that_never_started(workdir: Path):
    args = ["-m", *LONG, "logger=none", "seed=0,1,2"]
    done = signal_after_epochs(workdir, args, signal.SIGTERM, rows=2)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr[-2000:]
    (sweep,) = (workdir / "logs" / "train" / "multiruns").glob("*")
    summary = json.loads((sweep / "sweep_summary.json").read_text())
    assert summary["stopped_by"] == "SIGTERM"
    assert (summary["jobs"], summary["interrupted"], summary["completed"]) == (1, 1, 0)
    assert [job.split()[-1] for job in summary["not_started"]] == ["seed=1", "seed=2"]
    assert "jobs never started" in done.stderr
    (job,) = [p.parent for p in sweep.glob("*/.hydra")]
    assert metrics(job)["status"] == "interrupted"


QUICK = [*LONG, "trainer.max_epochs=1", "logger=none"]


@pytest.mark.slow
def test_a_closed_stdout_pipe_does_not_stop_the_run(workdir: Path):
    import subprocess

    from tests.helpers.cli import BIN, cli_env

    command = f"set -o pipefail; {BIN / 'research-train'} {' '.join(QUICK)} | head -5"
    done = subprocess.run(
        ["bash", "-c", command], cwd=workdir, env=cli_env(workdir), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.splitlines()) == 5
    assert metrics(run_dirs(workdir)[0])["status"] == "completed"


@pytest.mark.slow
def test_a_stdout_on_a_full_device_does_not_stop_the_run(workdir: Path):
    import subprocess

    from tests.helpers.cli import BIN, cli_env

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(BIN / "research-train"), *QUICK],
            cwd=workdir,
            env=cli_env(workdir),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert metrics(run_dirs(workdir)[0])["status"] == "completed"
