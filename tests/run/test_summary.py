"""The one line a job ends with names the metrics it produced."""

from __future__ import annotations

from pathlib import Path

from research.run.summary import summary_line


def _line(tmp_path: Path, **payload: object) -> str:
    return summary_line("research-x", {"status": "completed", "run_dir": str(tmp_path), **payload})


def test_a_trained_run_shows_its_monitored_best_and_its_test_twin(tmp_path: Path):
    line = _line(
        tmp_path,
        monitor="val/acc",
        mode="max",
        best={"val/acc": 0.96, "epoch": 3, "test/acc": 0.95, "test/loss": 0.2},
        final={"val/acc": 0.97, "test/acc": 0.95, "test/loss": 0.2},
    )
    assert "val/acc (max) best 0.96 at epoch 3, test/acc 0.95;" in line
    assert "0.97" not in line  # the last epoch's values are not the run's result


def test_an_evaluation_of_the_val_split_shows_its_val_metrics(tmp_path: Path):
    line = _line(tmp_path, best={}, final={"val/loss": 0.1, "val/acc": 0.963, "val/acc_top3": 0.99})
    assert "; val/acc 0.963, val/acc_top3 0.99; run dir" in line


def test_a_trained_run_without_a_test_shows_no_final_values(tmp_path: Path):
    line = _line(
        tmp_path, monitor="val/acc", mode="max", best={"val/acc": 0.9}, final={"val/acc": 0.9}
    )
    assert line.count("0.9") == 1
