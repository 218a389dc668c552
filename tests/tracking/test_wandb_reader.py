"""The offline-run reader against files written by the real wandb client in offline mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from research.tracking.wandb_reader import find_offline_runs, read_offline_run


def _offline_run(folder: Path, exit_code: int) -> Path:
    import wandb

    os.environ["WANDB_SILENT"] = "true"
    run = wandb.init(
        mode="offline",
        dir=str(folder),
        project="proj",
        group="grp",
        job_type="train",
        tags=["x", "y"],
        config={"optimizer": {"lr": 0.01, "betas": [0.9, 0.99]}, "seed": 0},
        settings=wandb.Settings(silent=True),
    )
    for step in range(5):
        run.log({"train/loss": 1.0 / (step + 1), "epoch": step // 2}, step=step)
    run.summary["best/val/acc"] = 0.97
    run.finish(exit_code=exit_code)
    (path,) = find_offline_runs(folder)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    return {code: _offline_run(tmp_path_factory.mktemp(f"exit{code}"), code) for code in (0, 1)}


def test_reads_identity_config_history_summary(runs: dict[int, Path]):
    run = read_offline_run(runs[0])
    assert run.run_id and runs[0].name == f"run-{run.run_id}.wandb"
    assert (run.project, run.group, run.job_type, run.tags) == ("proj", "grp", "train", ["x", "y"])
    assert run.config["optimizer"] == {"lr": 0.01, "betas": [0.9, 0.99]}
    assert run.config["seed"] == 0
    assert [row["_step"] for row in run.history] == [0, 1, 2, 3, 4]
    assert [row["train/loss"] for row in run.history] == pytest.approx(
        [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]
    )
    assert run.summary["best/val/acc"] == 0.97
    assert run.exit_code == 0


def test_failed_run_has_its_exit_code(runs: dict[int, Path]):
    assert read_offline_run(runs[1]).exit_code == 1


def test_folder_lookup_finds_the_run_file(runs: dict[int, Path]):
    folder = runs[1].parents[2]  # the dir passed to wandb.init
    assert read_offline_run(folder).path == runs[1]


def test_truncated_file_yields_the_records_before_the_damage(runs: dict[int, Path], tmp_path):
    data = runs[0].read_bytes()
    cut = tmp_path / "wandb" / "offline-run-cut" / runs[0].name
    cut.parent.mkdir(parents=True)
    cut.write_bytes(data[: len(data) * 2 // 3])
    run = read_offline_run(cut)
    assert run.run_id == read_offline_run(runs[0]).run_id
    assert run.exit_code is None  # the exit record was in the lost part
    assert len(run.history) <= 5


def test_missing_path_and_foreign_file_fail_clearly(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_offline_run(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no wandb/offline-run"):
        read_offline_run(tmp_path)
    bogus = tmp_path / "run-abc.wandb"
    bogus.write_bytes(b"hello world")
    with pytest.raises(ValueError, match="not a W&B run file"):
        read_offline_run(bogus)
