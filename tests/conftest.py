"""Every test runs in its own folder, which is also its project root (nothing it writes, not even
a relative path, lands in the checkout), and with one data folder per session, so dataset
caches (tokenizers, the stdlib code-search build) are built once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Nothing reaches the network: the hub is offline, W&B writes offline runs quietly.
os.environ.update(HF_HUB_OFFLINE="1", WANDB_MODE="offline", WANDB_SILENT="true")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Workers share the cores: one torch thread each (and in the commands they start).
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def shared_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data folder for the whole run, shared by xdist workers too (builds are atomic)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if base.name.startswith("popen-gw") else base) / "shared-data"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(autouse=True)
def _own_project_root(
    tmp_path: Path, shared_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_ROOT", str(tmp_path))
    monkeypatch.setenv("RESEARCH_DATA_DIR", str(shared_data_dir))
    monkeypatch.chdir(tmp_path)
