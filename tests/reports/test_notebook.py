"""notebooks/ablation_report.ipynb runs under `pytest --nbmake` against a folder of runs, both
straight from the run dirs and from a report's runs.csv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from research.reports import build_report

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "ablation_report.ipynb"


@pytest.mark.parametrize("with_report", [False, True], ids=["run-dirs", "runs-csv"])
def test_notebook_executes(runs_folder: Path, tmp_path: Path, with_report: bool):
    source = tmp_path / "runs"
    shutil.copytree(runs_folder, source)
    if with_report:
        build_report(source, source / "report")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbmake", "-q", "-p", "no:cacheprovider", str(NOTEBOOK)],
        env={**os.environ, "REPORT_SOURCE": str(source)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout
