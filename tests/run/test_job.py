"""What every job does around its work: record how it ended in metrics.json, whatever happens, and
end with one line saying so."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from research import compat
from research.callbacks.divergence import DivergedError
from research.config.instantiate import HYDRA_HOOKS
from research.config.paths import config_dir
from research.run.job import run_job
from research.run.signals import Interrupted
from research.utils.engine_versions import version_base


def _run(tmp_path: Path, body: Callable[..., Any]) -> tuple[Any, dict[str, Any]]:
    """Run `body` as the work of a research-train job with run dir tmp_path/run; (outcome,
    metrics.json)."""
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        cfg = compose("train", ["logger=none", "seed=5"], return_hydra_config=True)
    OmegaConf.update(cfg, "hydra.run.dir", str(tmp_path / "run"))
    done = compat.hydra_run_job(
        cfg, lambda c: run_job("research-train", c, body), str(config_dir()), HYDRA_HOOKS
    )
    return done.return_value, json.loads((tmp_path / "run" / "metrics.json").read_text())


def test_a_completed_job_records_its_value_and_fields(tmp_path: Path, capsys):
    def body(config, record, loggers):
        record.fields.update(monitor="val/acc", mode="max", best={"val/acc": 0.5, "epoch": 2})
        return 0.5

    outcome, metrics = _run(tmp_path, body)
    assert (outcome.status, outcome.value, outcome.exit_code) == ("completed", 0.5, 0)
    assert metrics["status"] == "completed" and metrics["seed"] == 5 and metrics["error"] is None
    assert metrics["config"]["optimizer"]["lr"] == 0.001  # the resolved, completed config
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("research-train: completed in ")
    assert "val/acc (max) best 0.5 at epoch 2" in last and str(tmp_path / "run") in last


@pytest.mark.parametrize(
    ("error", "status", "exit_code"),
    [
        (ValueError("bad\nsecond line"), "failed", 1),
        (DivergedError("train/loss became nan"), "diverged", 1),
        (Interrupted(signal.SIGTERM), "interrupted", 143),
        (SystemExit(3), "failed", 1),
    ],
)
def test_every_ending_is_recorded_in_one_line(tmp_path, capsys, error, status, exit_code):
    def body(config, record, loggers):
        raise error

    outcome, metrics = _run(tmp_path, body)
    assert (outcome.status, outcome.exit_code, metrics["status"]) == (status, exit_code, status)
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("research")]
    assert "\n" not in metrics["error"] and metrics["error"] in line
    if status == "interrupted":
        assert metrics["signal"] == "SIGTERM"
        assert "no checkpoint was saved yet; start again: research-train" in line


def test_a_pruned_trial_is_finished_not_failed(tmp_path: Path):
    optuna = pytest.importorskip("optuna")

    def body(config, record, loggers):
        raise optuna.TrialPruned("pruned at epoch 1")

    outcome, metrics = _run(tmp_path, body)
    assert (outcome.status, outcome.exit_code, metrics["status"]) == ("pruned", 0, "pruned")
