"""Lightning's notices that research-train keeps off the console."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import lightning as L
import pytest

from research.run.noise import quiet_library_notices


@pytest.fixture
def srun_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with SLURM's `srun` on PATH and no SLURM job around this process: a login node."""
    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\nexit 0\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_NTASKS", raising=False)


def _trainer_warnings(quiet: bool) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if quiet:
            quiet_library_notices()
        L.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False)
    return [str(w.message) for w in caught]


def test_lightning_advises_srun_on_a_login_node(srun_on_path: None):
    assert any("`srun` command is available" in m for m in _trainer_warnings(quiet=False))


def test_a_run_keeps_the_srun_advice_off_its_console(srun_on_path: None):
    assert not any("`srun` command is available" in m for m in _trainer_warnings(quiet=True))
