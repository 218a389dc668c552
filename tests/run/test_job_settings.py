"""research-train and research-eval run their jobs under the same process settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from lightning.pytorch.trainer.connectors.logger_connector.result import _ResultMetric

from research import compat
from research.run.cuda_probe import NVML_CHECK
from research.run.job_settings import job_settings
from research.tracking.record import RunRecord


def test_a_job_runs_under_every_setting_and_records_its_precision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv(NVML_CHECK, "1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    # The patch is made once per process, so another test may have made it already: count the
    # job's own call as well as checking the patch is in place.
    patch, patched = compat.lightning_log_skips_same_device_moves, []
    monkeypatch.setattr(
        compat, "lightning_log_skips_same_device_moves", lambda: patched.append(patch())
    )
    record = RunRecord(tmp_path, {"seed": 0}, [])
    with job_settings({"float32_matmul_precision": "high"}, record):
        assert torch.get_float32_matmul_precision() == "high"
        assert NVML_CHECK not in os.environ
        assert "lightning_log_skips_same_device_moves" in _ResultMetric.to.__qualname__
        assert len(patched) == 1
    assert record.fields["float32_matmul_precision"] == "high"
    assert torch.get_float32_matmul_precision() == "highest"  # put back for the next job
