"""`callbacks=throughput` in a real training run: the metrics reach W&B's offline run, the CSV
logger, history.jsonl and metrics.json, agree with each other, and research-report tables them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from research.cli.report import main as report
from research.tracking.wandb_reader import read_offline_run
from tests.helpers.cli import FAST, metrics, run_cli, run_dirs, wandb_written

NAMES = ("samples_per_s", "flops_per_step", "flops_per_s", "mfu")
BATCH, BATCHES = 32, 5  # digits' batch size; debug=limit's training batches per epoch
PEAK = 1e12


@pytest.mark.slow
def test_throughput_metrics_reach_every_logger_history_and_report(tmp_path: Path, capsys):
    done = run_cli(
        "research-train",
        *FAST,
        "callbacks=throughput",
        f"callbacks.throughput.peak_flops={PEAK}",
        "logger=many",
        "trainer.log_every_n_steps=1",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    wandb_written()
    (run,) = run_dirs(tmp_path)
    rows = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    previous = 0.0
    for row in rows:
        values = {name: row[f"throughput/{name}"] for name in NAMES}
        assert all(v > 0 for v in values.values()) and "throughput/tokens_per_s" not in row
        # Training time is at most the epoch's wall time (which includes validation).
        assert values["samples_per_s"] * (row["time_s"] - previous) >= BATCH * BATCHES
        previous = row["time_s"]
        steps_per_s = values["samples_per_s"] / BATCH
        flops_per_s = values["flops_per_step"] * steps_per_s
        assert values["flops_per_s"] == pytest.approx(flops_per_s, rel=1e-5)
        assert values["mfu"] == pytest.approx(values["flops_per_s"] / PEAK, rel=1e-5)
    final = metrics(run)["final"]
    assert all(final[f"throughput/{name}"] == rows[-1][f"throughput/{name}"] for name in NAMES)

    logged = read_offline_run(run)
    for name in NAMES:
        assert [r for r in logged.history if f"throughput/{name}" in r]
        assert len([r for r in logged.history if f"throughput/{name}_epoch" in r]) == 2
    (csv_file,) = run.glob("csv/**/metrics.csv")
    with csv_file.open() as f:
        columns = set(next(csv.reader(f)))
    assert {f"throughput/{name}_epoch" for name in NAMES} <= columns

    out = tmp_path / "report"
    args = ["--out", str(out), "--metric", "throughput/samples_per_s", "--metric", "throughput/mfu"]
    assert report([str(run.parent), *args]) == 0
    table = (out / "report.md").read_text()
    header = "final.throughput/samples_per_s ↑ | final.throughput/mfu ↑ |"
    assert header in table
    assert f"{final['throughput/samples_per_s']:.4g}"[:3] in capsys.readouterr().out
