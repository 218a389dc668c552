"""`float32_matmul_precision` holds for its job only and is recorded in metrics.json."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from research.run.matmul_precision import float32_matmul_precision
from tests.cli.test_multirun import sweep_jobs
from tests.helpers.cli import FAST, metrics, run_cli


def test_the_precision_holds_inside_and_is_put_back_after():
    with float32_matmul_precision("high") as used:
        assert used == torch.get_float32_matmul_precision() == "high"
        with float32_matmul_precision(None) as inner:
            assert inner == "high"  # null leaves what the process has
    assert torch.get_float32_matmul_precision() == "highest"


@pytest.mark.slow  # a sweep of two runs: about 8 s
def test_a_job_of_a_multirun_does_not_inherit_the_previous_jobs_precision(tmp_path: Path):
    done = run_cli(
        "research-train",
        "-m",
        *FAST,
        "logger=none",
        "test=false",
        "float32_matmul_precision=high,null",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    _, jobs = sweep_jobs(tmp_path)
    assert [metrics(job)["float32_matmul_precision"] for job in jobs] == ["high", "highest"]
    assert torch.get_float32_matmul_precision() == "highest"
