"""How a finished multirun's job statuses become its summary line and the command's exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from research.cli.exit_status import _sweep_failures
from research.tracking.sweep_summary import SweepSummary, summarize


def _sweep(root: Path, statuses: list[str]) -> Path:
    """A sweep dir whose job folders hold the metrics.json a job writes when it ends."""
    for number, status in enumerate(statuses):
        job = root / f"{number}_job"
        (job / ".hydra").mkdir(parents=True)
        (job / "metrics.json").write_text(json.dumps({"status": status}))
    return root


def _finish(sweep_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, int]:
    from omegaconf import OmegaConf

    SweepSummary().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep_dir)}}}))
    return capsys.readouterr().out, _sweep_failures(sweep_dir)


def test_pruned_trials_beside_completed_ones_are_not_failures(tmp_path, capsys):
    line, failures = _finish(_sweep(tmp_path, ["completed", "pruned", "pruned"]), capsys)
    assert failures == 0
    assert "sweep: 1/3 jobs completed, 0 failed, 0 diverged, 2 pruned" in line
    assert "no best value" not in line


def test_a_sweep_whose_every_trial_was_pruned_fails_and_says_why(tmp_path, capsys):
    line, failures = _finish(_sweep(tmp_path, ["pruned", "pruned"]), capsys)
    assert failures == 1
    assert "every trial was pruned, so the search has no best value" in line
    assert "hydra.sweeper.pruner.name=none" in line


def test_a_failed_or_unreported_job_counts_as_failed(tmp_path, capsys):
    sweep = _sweep(tmp_path, ["completed", "diverged"])
    (sweep / "2_killed" / ".hydra").mkdir(parents=True)  # killed before writing metrics.json
    line, failures = _finish(sweep, capsys)
    assert failures == 2
    assert summarize(sweep)["not_completed"] == ["1_job", "2_killed"]
    assert "sweep: 1/3 jobs completed, 1 failed, 1 diverged" in line
