"""Precision and multi-process strategies run end to end on CPU."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import FAST, metrics, run_cli, run_dirs


def test_bf16_mixed_precision_run_completes(workdir: Path):
    done = run_cli(
        "research-train", *FAST, "logger=none", "trainer.precision=bf16-mixed", cwd=workdir
    )
    assert done.returncode == 0, done.stderr[-2000:]
    m = metrics(run_dirs(workdir)[0])
    assert m["status"] == "completed"
    assert m["config"]["trainer"]["precision"] == "bf16-mixed"
    assert 0.0 < m["final"]["train/loss"] < 10.0


def test_ddp_sim_two_cpu_processes(workdir: Path):
    done = run_cli("research-train", *FAST, "trainer=ddp_sim", cwd=workdir, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    m = metrics(run)
    assert m["status"] == "completed"
    assert m["config"]["trainer"]["devices"] == 2
    assert (run / "checkpoints" / "best.ckpt").is_file()
    assert len((run / "history.jsonl").read_text().splitlines()) == 2
    # Rank 1 shares the run dir but writes no config of its own.
    assert not list(workdir.glob(".pl_hydra*")) and not list(run.glob(".pl_hydra*"))
