"""Precision and multi-process strategies run end to end on CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import FAST, metrics, run_cli, run_dirs


@pytest.mark.slow
def test_bf16_mixed_precision_run_completes(workdir: Path):
    done = run_cli(
        "research-train", *FAST, "logger=none", "trainer.precision=bf16-mixed", cwd=workdir
    )
    assert done.returncode == 0, done.stderr[-2000:]
    m = metrics(run_dirs(workdir)[0])
    assert m["status"] == "completed"
    assert m["config"]["trainer"]["precision"] == "bf16-mixed"
    assert 0.0 < m["final"]["train/loss"] < 10.0


@pytest.mark.slow
def test_ddp_sim_two_cpu_processes(workdir: Path):
    # The whole test split (180 digits, 90 a rank): its mean loss is the same on one process.
    args = [*FAST, "trainer=ddp_sim", "trainer.limit_test_batches=null"]
    done = run_cli("research-train", *args, cwd=workdir, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    m = metrics(run)
    assert m["status"] == "completed"
    assert m["config"]["trainer"]["devices"] == 2
    assert (run / "checkpoints" / "best.ckpt").is_file()
    assert len((run / "history.jsonl").read_text().splitlines()) == 2
    # Rank 1 shares the run dir but writes no config of its own.
    assert not list(workdir.glob(".pl_hydra*")) and not list(run.glob(".pl_hydra*"))

    # test/loss is averaged over both ranks (sync_dist), not rank 0's half of the test set.
    single = 'overrides=["trainer.devices=1","trainer.strategy=auto"]'
    again = run_cli("research-eval", f"run_dir={run}", single, cwd=workdir)
    assert again.returncode == 0, again.stderr[-2000:]
    evaluated = metrics(run_dirs(workdir, task="eval")[0])["final"]
    assert evaluated["test/loss"] == pytest.approx(m["best"]["test/loss"], abs=1e-5)
    assert evaluated["test/acc"] == pytest.approx(m["best"]["test/acc"], abs=1e-6)


def test_more_loader_workers_than_the_machine_runs_is_one_line_and_exit_2(workdir: Path):
    # Each worker is a process: 100000 of them took minutes to fork, and as long to stop.
    from research.config.devices import process_limit, usable_cores

    done = run_cli("research-train", *FAST, "data.num_workers=100000", cwd=workdir)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("research-train: error: data.num_workers=100000 starts 100000 loader")
    assert f"between 0 and {process_limit(usable_cores())}" in line
    assert not (workdir / "logs").exists()
