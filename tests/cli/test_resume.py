"""A run killed with SIGKILL mid-epoch and resumed ends exactly where an uninterrupted one does."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.cli import BIN, FAST, cli_env, metrics, run_cli, run_dirs
from tests.helpers.killed_writes import killed_mid_write

# Small batches give ~180 steps per epoch, so the kill lands inside an epoch.
ARGS = [
    "trainer.max_epochs=4",
    "data.batch_size=8",
    "trainer.deterministic=true",
    "trainer.enable_progress_bar=false",
    "trainer.enable_model_summary=false",
]


def _kill_during_third_epoch(workdir: Path) -> Path:
    proc = subprocess.Popen(
        [str(BIN / "research-train"), *ARGS],
        cwd=workdir,
        env=cli_env(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        runs = run_dirs(workdir)
        history = runs[0] / "history.jsonl" if runs else None
        if history and history.exists() and len(history.read_text().splitlines()) >= 2:
            time.sleep(0.2)
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (killed,) = run_dirs(workdir)
    return killed


@pytest.mark.slow
def test_resume_after_sigkill_matches_uninterrupted_run(workdir: Path):
    killed = _kill_during_third_epoch(workdir)
    assert not (killed / "metrics.json").exists()
    assert len((killed / "history.jsonl").read_text().splitlines()) < 4

    # Each in a fresh process, as after a real kill: equality to the last bit is the claim.
    resumed = run_cli("research-train", *ARGS, "ckpt_path=last", cwd=workdir, subprocess=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    straight = run_cli("research-train", *ARGS, cwd=workdir, subprocess=True)
    assert straight.returncode == 0, straight.stderr[-2000:]

    resumed_dir, straight_dir = run_dirs(workdir)
    assert resumed_dir == killed, "ckpt_path=last continues in the killed run's own dir"
    r, s = metrics(resumed_dir), metrics(straight_dir)
    assert r["resumed_from"] == str(killed / "checkpoints" / "last.ckpt")
    assert r["run_id"] == s["run_id"]
    assert r["final"] == s["final"]
    assert r["best"] == s["best"]
    assert _without_time(resumed_dir) == _without_time(straight_dir)
    # The resumed run logs to the same W&B run id, in a second offline-run folder.
    offline = sorted((killed / "wandb").glob("offline-run-*"))
    assert len(offline) == 2 and r["wandb"]["run_id"] != s["wandb"]["run_id"]
    assert all(folder.name.endswith(r["wandb"]["run_id"]) for folder in offline)


@pytest.mark.slow
def test_a_requeued_job_resumes_its_own_last_checkpoint(workdir: Path):
    """What a SLURM requeue through submitit does: the same command in the same output dir."""
    killed = _kill_during_third_epoch(workdir)
    again = run_cli("research-train", *ARGS, f"hydra.run.dir={killed}", cwd=workdir)
    assert again.returncode == 0, again.stderr[-2000:]
    m = metrics(killed)
    assert m["status"] == "completed" and m["resumed_from"] == str(
        killed / "checkpoints" / "last.ckpt"
    )
    assert [row["epoch"] for row in _without_time(killed)] == [0, 1, 2, 3]


def _without_time(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "time_s"} for row in rows]


@pytest.mark.slow
def test_resuming_a_killed_run_removes_the_temporaries_of_its_killed_writes(workdir: Path):
    run = workdir / "run"
    args = [*FAST, "logger=none", f"hydra.run.dir={run}"]
    first = run_cli("research-train", *args, cwd=workdir)
    assert first.returncode == 0, first.stderr[-2000:]
    # What a run SIGKILLed while writing its checkpoint and history leaves: no metrics.json,
    # and the temporary files of both writes.
    (run / "metrics.json").unlink()
    leftovers = [
        killed_mid_write(run / "checkpoints" / "last.ckpt"),
        killed_mid_write(run / "history.jsonl"),
    ]
    users = [run / "checkpoints" / "notes.tmp", run / ".notes.tmp"]
    for path in users:
        path.write_text("mine")

    resumed = run_cli("research-train", *args, cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert metrics(run)["resumed_from"] == str(run / "checkpoints" / "last.ckpt")
    assert not any(path.exists() for path in leftovers)
    assert all(path.read_text() == "mine" for path in users)


@pytest.mark.slow
def test_a_run_resumed_in_a_new_run_dir_keeps_the_best_checkpoint_from_before(workdir: Path):
    # The resumed run trains no further epoch (both of debug=limit's are done), so its best
    # checkpoint is the earlier run's: before the fix its test of the best checkpoint failed
    # on a best.ckpt that the new run dir did not have.
    first = run_cli("research-train", *FAST, "logger=none", cwd=workdir)
    assert first.returncode == 0, first.stderr[-2000:]
    (earlier,) = run_dirs(workdir)
    before = {p.name: p.read_bytes() for p in (earlier / "checkpoints").iterdir()}

    last = earlier / "checkpoints" / "last.ckpt"
    resumed = run_cli("research-train", *FAST, "logger=none", f"ckpt_path={last}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    (later,) = [d for d in run_dirs(workdir) if d != earlier]
    assert metrics(later)["best"]["checkpoint"] == "checkpoints/best.ckpt"
    best = later / "checkpoints" / "best.ckpt"
    assert best.read_bytes() == before["best.ckpt"]
    assert metrics(later)["best"]["test/acc"] == metrics(earlier)["best"]["test/acc"]
    assert {p.name: p.read_bytes() for p in (earlier / "checkpoints").iterdir()} == before
