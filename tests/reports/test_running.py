"""research-report tells a run that is still going (its run dir locked by a live process) from
one that was killed: the first is `running` and left out of every count, the second failed."""

from __future__ import annotations

import json
from pathlib import Path

from research.cli.report import main
from research.tracking.run_dir import STARTED_FILE
from tests.helpers.locks import held_by_another_process
from tests.reports.conftest import write_run


def _started(run_dir: Path, run_id: str) -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / STARTED_FILE).write_text(json.dumps({"run_id": run_id}))
    return run_dir


def test_a_running_run_is_running_and_a_killed_one_failed(tmp_path: Path, capsys):
    runs = tmp_path / "runs"
    for seed in (0, 1):
        write_run(runs / f"{seed}_done", seed, [f"seed={seed}"])
    killed = _started(runs / "2_killed", "0123456789ab-s2")
    live = _started(runs / "3_live", "0123456789ab-s3")
    # A resumed run: its earlier attempt's metrics.json says interrupted; it runs again now.
    resumed = runs / "4_resumed"
    write_run(resumed, 4, ["seed=4"], status="interrupted")
    out = tmp_path / "out"
    with held_by_another_process(live), held_by_another_process(resumed):
        assert main([str(runs), "--out", str(out), "--metric", "test/acc"]) == 0
    captured = capsys.readouterr()
    status = {
        Path(row.split(",")[0]).name: row for row in (out / "runs.csv").read_text().splitlines()
    }
    assert ",running," in status["3_live"] and ",running," in status["4_resumed"]
    assert ",failed," in status["2_killed"]
    assert "| default | 2 | 1 | 0 |" in captured.out  # n=2 completed, 1 failed: the killed one
    assert f"{live}: still running (a live process holds its run dir)" in captured.err
    assert f"{killed}/metrics.json: no metrics.json (the run was killed" in captured.err
