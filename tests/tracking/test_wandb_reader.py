"""The offline-run reader against files written by the real wandb client in offline mode."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest

from research.tracking.wandb_reader import find_offline_runs, read_offline_run
from tests.helpers.cli import wandb_written

CONFIG = {
    "model": {"net": {"channels": [32, 64], "act": "relu"}, "dropout": None},
    "optimizer": {"lr": 0.01, "betas": [0.9, 0.99]},
    # a top-level dict with a "value" key stays as given (W&B's config.yaml wraps values so)
    "threshold": {"value": 0.5, "metric": "val/acc"},
    "seed": 0,
}
LONG = "ab" * 40_000  # one record over 64 KiB: split into FIRST, MIDDLE and LAST chunks


@dataclass
class Logged:
    folder: Path  # the `dir` given to wandb.init, holding wandb/offline-run-*
    completed: Path  # run-<id>.wandb of the run finished with exit code 0
    failed: Path  # of the run finished with exit code 1, started after the first
    started: datetime
    ended: datetime


def _init(folder: Path, **init):
    import wandb

    settings = wandb.Settings(console="off")
    return wandb.init(mode="offline", dir=str(folder), settings=settings, **init)


def _log_training(run, folder: Path) -> None:
    for step in range(10):
        run.log({"train/loss": 1 / (step + 1), "lr": {"group0": 0.1 * step}}, step=2 * step)
        if step % 3 == 0:
            run.log({"val/acc": step / 10}, step=2 * step)  # joins that step's row
        if step == 5:
            run.summary["long"] = LONG
    saved = folder / "notes.txt"
    saved.write_text("kept with the run")
    run.save(str(saved), base_path=str(folder), policy="now")
    run.summary.update({"best/val/acc": 0.97, "status": "completed"})


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    folder = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("WANDB_SILENT", "true")
        env.setenv("WANDB_MODE", "offline")
        for name in ("WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
            env.setenv(name, str(folder / name.lower()))
        started = datetime.now(timezone.utc)
        run = _init(
            folder,
            project="proj",
            group="grp",
            job_type="train",
            tags=["x", "y"],
            name="first",
            notes="a note",
            config=CONFIG,
        )
        _log_training(run, folder)
        run.finish(exit_code=0)
        completed = Path(run.settings.sync_file)  # the run-<id>.wandb it wrote

        run = _init(folder, project="proj", job_type="eval", config={"seed": 1})
        run.log({"train/loss": float("nan")}, step=0)
        run.summary["status"] = "diverged"
        run.finish(exit_code=1)
        failed = Path(run.settings.sync_file)
        ended = datetime.now(timezone.utc)
        wandb_written()  # finish() only asks W&B's service to write the file out
    return Logged(folder, completed, failed, started, ended)


def test_reads_back_identity_config_history_summary_and_exit(logged: Logged):
    import wandb

    run = read_offline_run(logged.completed)
    assert run.path == logged.completed
    assert logged.completed.name == f"run-{run.run_id}.wandb"
    assert (run.project, run.group, run.job_type) == ("proj", "grp", "train")
    assert (run.tags, run.name, run.notes) == (["x", "y"], "first", "a note")
    assert logged.started <= run.started_at <= logged.ended
    assert run.config == CONFIG  # nested as given, without W&B's own "_wandb" entry
    assert [row["_step"] for row in run.history] == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
    assert [row["train/loss"] for row in run.history] == pytest.approx(
        [1 / s for s in range(1, 11)]
    )
    assert [row["lr"]["group0"] for row in run.history] == pytest.approx(
        [0.1 * s for s in range(10)]
    )
    val_acc = {row["_step"]: row["val/acc"] for row in run.history if "val/acc" in row}
    assert val_acc == {0: 0.0, 6: 0.3, 12: 0.6, 18: 0.9}
    assert run.summary["best/val/acc"] == 0.97 and run.summary["status"] == "completed"
    assert run.summary["long"] == LONG
    assert run.summary["train/loss"] == run.history[-1]["train/loss"]  # W&B's last-value summary
    assert "notes.txt" in run.files
    assert run.exit_code == 0
    assert run.wandb_version == wandb.__version__


def test_failed_run_has_its_exit_code_and_nan_values(logged: Logged):
    run = read_offline_run(logged.failed)
    assert (run.job_type, run.group, run.tags, run.config) == ("eval", None, [], {"seed": 1})
    assert math.isnan(run.history[0]["train/loss"]) and math.isnan(run.summary["train/loss"])
    assert run.summary["status"] == "diverged"
    assert run.exit_code == 1


def test_folder_lookup_finds_every_run_and_reads_the_newest(logged: Logged):
    assert find_offline_runs(logged.folder) == [logged.completed, logged.failed]
    assert find_offline_runs(logged.folder / "wandb") == [logged.completed, logged.failed]
    assert read_offline_run(logged.folder).path == logged.failed
    assert read_offline_run(logged.completed.parent).path == logged.completed


def _read_damaged(path: Path, data: bytes):
    path.write_bytes(data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = read_offline_run(path)
    return run, [str(w.message) for w in caught if w.category is RuntimeWarning]


def test_cut_or_corrupt_file_yields_the_records_before_the_damage(logged: Logged, tmp_path: Path):
    full = read_offline_run(logged.completed)
    data = logged.completed.read_bytes()
    path = tmp_path / logged.completed.name

    half, damage = _read_damaged(path, data[: len(data) // 2])  # inside the 80 kB record
    assert damage and "cut short" in damage[0] and str(path) in damage[0]
    assert (half.run_id, half.config, half.exit_code) == (full.run_id, full.config, None)
    assert 1 <= len(half.history) < len(full.history)
    assert half.history == full.history[: len(half.history)]
    assert "long" not in half.summary

    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    corrupt, damage = _read_damaged(path, bytes(flipped))
    assert damage and "checksum mismatch" in damage[0]
    assert corrupt.history == half.history and corrupt.exit_code is None

    seen = 0
    for cut in [*range(0, len(data), 1499), len(data) - 1]:  # a prefix of the run, never a crash
        try:
            run, _ = _read_damaged(path, data[:cut])
        except ValueError as err:  # cut before the run record: nothing to read, and it says so
            assert "holds no run record yet" in str(err) and seen == 0 and cut < 1499 * 2
            continue
        assert run.history == full.history[: len(run.history)]
        assert len(run.history) >= seen and run.exit_code is None
        seen = len(run.history)
    assert seen == len(full.history)


def test_missing_path_and_foreign_file_fail_in_one_line(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="does not exist") as missing:
        read_offline_run(tmp_path / "nope")
    assert "\n" not in str(missing.value)
    with pytest.raises(FileNotFoundError, match="no wandb/offline-run"):
        read_offline_run(tmp_path)
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        find_offline_runs(tmp_path / "nope")
    bogus = tmp_path / "run-abc.wandb"
    bogus.write_bytes(b"hello world")
    with pytest.raises(ValueError, match="not a W&B run file"):
        read_offline_run(bogus)
    bogus.write_bytes(b":W&B\xe1\xbe\x07")
    with pytest.raises(ValueError, match="format version 7"):
        read_offline_run(bogus)


def test_a_file_w_and_b_has_not_written_out_says_so(tmp_path: Path, monkeypatch):
    """Until W&B's service closes a run it may hold all of it in memory: `finish()` returns
    before that, so a read right after it sees the header alone. That read is an error naming
    the cause, never a run whose project, group and job type are None."""
    import wandb

    monkeypatch.setenv("WANDB_SILENT", "true")
    run = wandb.init(
        mode="offline",
        dir=str(tmp_path),
        project="proj",
        group="grp",
        job_type="report",
        settings=wandb.Settings(console="off", x_transaction_log_flush_interval=0),  # no timer
    )
    try:
        run.log({"loss": 1.0})
        path = Path(run.settings.sync_file)
        assert path.read_bytes() == b":W&B\xe1\xbe\x00"  # the header, nothing more yet
        with pytest.raises(ValueError, match="holds no run record yet") as err:
            read_offline_run(path)
        assert "after wandb.teardown()" in str(err.value) and "\n" not in str(err.value)
    finally:
        run.finish()
        wandb_written()
    written = read_offline_run(path)
    assert (written.project, written.group, written.job_type) == ("proj", "grp", "report")
