"""notebooks/ablation_report.ipynb runs from a checkout's notebooks/ folder with no environment
variable, takes an ablation name or a folder, and always shows the runs as they are now."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.reports.conftest import write_run

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "ablation_report.ipynb"


def _run(checkout: Path, source: str) -> str:
    """Execute the notebook as `checkout/notebooks/ablation_report.ipynb` with `source` set;
    returns every output's text."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    (params,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    params.source = params.source.replace('"cnn_sgd_momentum"', json.dumps(source), 1)
    NotebookClient(
        nb, timeout=240, resources={"metadata": {"path": str(checkout / "notebooks")}}
    ).execute()
    texts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", ""))
            texts += [str(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(texts)


@pytest.fixture
def checkout(runs_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("RESEARCH_LOG_DIR", "RESEARCH_ROOT", "REPORT_SOURCE"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "checkout"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shutil.copytree(runs_folder / "ablations", root / "logs" / "ablations")
    shutil.copytree(runs_folder / "multiruns", root / "logs" / "multiruns")
    return root


@pytest.mark.slow
def test_notebook_reads_an_ablation_name_and_is_never_stale(checkout: Path):
    first = _run(checkout, "widths")
    assert "| single (baseline) | 1 | 0 | 0 |" in first
    assert "Against the baseline `single`" in first
    # A new run of a new variant appears on the next execution (nothing cached).
    folder = checkout / "logs" / "ablations" / "widths" / "2026-01-03_00-00-00-000000"
    write_run(folder / "0_narrow_s0", 0, ["model.width=4", "seed=0"], variant="narrow")
    assert "| narrow (baseline) | 1 | 0 | 0 |" in _run(checkout, "widths")  # first by name


@pytest.mark.slow
def test_notebook_reads_a_folder_relative_to_notebooks(checkout: Path):
    text = _run(checkout, "../logs/multiruns")
    assert "| debug=limit,optimizer.lr=0.01 (baseline) | 3 | 0 | 0 |" in text
