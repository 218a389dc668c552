"""A run dir holds one run: reuse by another config and a second live process are refused, and
a full disk never costs the previous checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from tests.helpers.cli import BIN, FAST, cli_env, metrics, run_cli, run_dirs
from tests.helpers.filesystems import tiny_tmpfs
from tests.helpers.signals import history_rows

QUIET = [*FAST, "logger=none"]
LONG = [*QUIET, "trainer.max_epochs=40"]


@pytest.mark.slow
def test_reusing_a_run_dir_with_another_config_is_refused_and_changes_nothing(workdir: Path):
    done = run_cli("research-train", *QUIET, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    before = {p: p.read_bytes() for p in [run / ".hydra" / "config.yaml", run / "metrics.json"]}
    again = run_cli(
        "research-train", *QUIET, "optimizer.lr=0.01", "seed=3", f"hydra.run.dir={run}", cwd=workdir
    )
    assert again.returncode == 2, again.stderr[-2000:]
    (line,) = again.stderr.strip().splitlines()
    assert f"hydra.run.dir={run} holds run {metrics(run)['run_id']}" in line
    assert "differing keys: data.seed, optimizer.lr, seed)" in line  # data.seed is ${seed}
    assert {p: p.read_bytes() for p in before} == before


def _start(workdir: Path, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(BIN / "research-train"), *args],
        cwd=workdir,
        env=cli_env(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_rows(workdir: Path, rows: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 240
    while history_rows(workdir) < rows:
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)


@pytest.mark.slow
def test_a_second_resume_of_a_live_run_is_refused_and_a_killed_one_does_not_block(workdir: Path):
    first = _start(workdir, LONG)
    _wait_for_rows(workdir, 2, first)
    (run,) = run_dirs(workdir)
    started = time.monotonic()
    second = run_cli("research-train", *LONG, "ckpt_path=last", cwd=workdir)
    assert second.returncode == 2, second.stderr[-2000:]
    (line,) = second.stderr.strip().splitlines()
    assert f"run dir {run} is in use by pid {first.pid} on " in line
    assert time.monotonic() - started < 30  # refused before torch is imported
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    assert (run / ".lock").exists()  # the file stays; the kernel dropped the lock
    rows = history_rows(workdir)
    resumed = _start(workdir, [*LONG, "ckpt_path=last"])
    _wait_for_rows(workdir, rows + 1, resumed)  # it got past the stale lock and trains
    resumed.send_signal(signal.SIGTERM)
    assert resumed.wait(timeout=120) == 128 + signal.SIGTERM
    assert metrics(run)["status"] == "interrupted" and len(run_dirs(workdir)) == 1


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 16 MiB tmpfs: a real filesystem that really fills up (needs root)."""
    with tiny_tmpfs(tmp_path / "disk", "16m") as mount:
        yield mount


def _fill(disk: Path, leave: int) -> Path:
    """Write a file that leaves `leave` bytes free on `disk`."""
    stat = os.statvfs(disk)
    filler = disk / "filler"
    with filler.open("wb") as out:
        out.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return filler


def _fill_between_writes(disk: Path, proc: subprocess.Popen[str], leave: int) -> Path:
    """Fill `disk` while the run is stopped with no checkpoint half-written: a partial file
    that is then completed and renamed over the old one would free a checkpoint's worth of
    space, and the run could go on writing in that room to the end."""
    while True:
        proc.send_signal(signal.SIGSTOP)
        if not list(disk.rglob(".*.tmp")):
            break
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.005)
    try:
        return _fill(disk, leave)
    finally:
        proc.send_signal(signal.SIGCONT)


@pytest.mark.slow
def test_a_full_disk_fails_the_run_in_one_line_and_keeps_last_ckpt(workdir: Path, small_disk):
    run = small_disk / "run"
    args = [*LONG, f"hydra.run.dir={run}"]
    proc = _start(workdir, args)
    _wait_for_rows(small_disk, 2, proc)  # epoch 0's checkpoints are on disk
    filler = _fill_between_writes(small_disk, proc, leave=200_000)  # no room for a 650 kB ckpt
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1, stderr[-2000:]
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("research-train:")]
    assert "no space left on device while writing " + str(run / "checkpoints") in line
    m = metrics(run)
    assert m["status"] == "failed" and "no space left on device while writing" in m["error"]
    assert not list((run / "checkpoints").glob(".*.tmp"))  # the partial file is gone
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
    assert last["epoch"] >= 0

    filler.unlink()
    resumed = run_cli("research-train", *args, cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert metrics(run)["status"] == "completed"
    assert metrics(run)["resumed_from"] == str(run / "checkpoints" / "last.ckpt")


def _one_line(stderr: str) -> str:
    (line,) = stderr.strip().splitlines()
    return line


@pytest.mark.slow
def test_a_completed_run_is_never_re_entered(workdir: Path):
    done = run_cli("research-train", *QUIET, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    # The same config, by its absolute path and by a relative spelling of it.
    for spelled in (run, run.relative_to(workdir)):
        again = run_cli("research-train", *QUIET, f"hydra.run.dir={spelled}", cwd=workdir)
        assert again.returncode == 2, again.stderr[-2000:]
        line = _one_line(again.stderr)
        assert f"holds the completed run {metrics(run)['run_id']}" in line
        assert f"research-eval run_dir={run}" in line and "drop hydra.run.dir" in line
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert run_dirs(workdir) == [run]


@pytest.mark.slow
def test_two_launches_into_one_run_dir_leave_one_consistent_run(workdir: Path):
    run = workdir / "shared-run"
    launches = [
        _start(workdir, [*QUIET, f"seed={seed}", f"hydra.run.dir={run}"]) for seed in (0, 1)
    ]
    ended = [(proc.wait(timeout=300), proc.stderr.read()) for proc in launches]
    codes = sorted(code for code, _ in ended)
    assert codes == [0, 2], ended
    (refused,) = [err for code, err in ended if code == 2]
    line = _one_line(refused)  # refused before writing anything: busy, or another run's dir
    assert f"run dir {run} is in use by pid" in line or f"hydra.run.dir={run} holds run" in line
    saved = (run / ".hydra" / "config.yaml").read_text()
    assert f"\nseed: {metrics(run)['seed']}\n" in f"\n{saved}"  # the config of the run trained


def test_a_full_disk_at_start_up_is_one_line_and_leaves_no_run_dir(workdir: Path, small_disk):
    _fill(small_disk, leave=0)
    for where in (f"hydra.run.dir={small_disk / 'run'}", f"paths.log_dir={small_disk / 'logs'}"):
        full = run_cli("research-train", *QUIET, where, cwd=workdir)
        assert full.returncode == 2, full.stderr[-2000:]
        line = _one_line(full.stderr)
        assert line.startswith("research-train: error: cannot start a run in ")
        assert "its disk is full" in line
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]
