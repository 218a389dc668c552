"""W&B's service process, started on a thread while the job builds its data and model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lightning.pytorch.utilities import rank_zero_only

from research.tracking.wandb_run import start_wandb_service

WANDB = {"_target_": "lightning.pytorch.loggers.WandbLogger", "mode": "offline"}
CSV = {"_target_": "lightning.pytorch.loggers.CSVLogger"}


@pytest.mark.parametrize(
    "logger_cfg",
    [None, {}, {"wandb": None}, {"csv": CSV}, {"wandb": {**WANDB, "mode": "disabled"}}],
    ids=["none", "empty", "removed", "csv-only", "disabled"],
)
def test_no_service_starts_where_no_wandb_run_will(logger_cfg: dict[str, Any] | None):
    assert start_wandb_service(logger_cfg) is None


def test_no_service_starts_on_a_rank_other_than_zero(monkeypatch):
    monkeypatch.setattr(rank_zero_only, "rank", 1)
    assert start_wandb_service({"wandb": WANDB}) is None


_PROBE = """
import json, os, sys, threading, wandb
from research.tracking.wandb_run import start_wandb_service
starting = start_wandb_service(json.loads(sys.argv[2]))
starting.join()
token = os.environ["WANDB_SERVICE"]  # set once the service process answers
run = wandb.init(mode="offline", dir=sys.argv[1], settings=wandb.Settings(silent=True))
run.log({"loss": 0.5})
run.finish()
exporters = [t.name for t in threading.enumerate() if t.name.startswith("Otel")]
print(os.environ["WANDB_SERVICE"] == token, starting.name, exporters == [])
"""


@pytest.mark.slow  # a fresh process importing Lightning, a W&B service started and stopped: ~9 s
def test_the_run_uses_the_service_started_beside_the_build(tmp_path: Path):
    """A fresh process with no service of its own: a second service would replace the token."""
    env = {k: v for k, v in os.environ.items() if k != "WANDB_SERVICE"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path), json.dumps({"csv": CSV, "wandb": WANDB})],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    # One service, started on the thread; no W&B usage telemetry from an offline session.
    assert done.stdout.split() == ["True", "wandb-service-start", "True"]
    assert list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
