"""Run the installed console scripts in a scratch folder, as a user would, and read what a run
leaves behind. Shared by the end-to-end tests (tests/cli, tests/reports, ...)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
# Short, quiet runs: a few batches of two epochs.
FAST = ["debug=limit", "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false"]


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "RESEARCH_"))}
    env.update(WANDB_SILENT="true", HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore")
    return env


def run_cli(
    prog: str, *args: str, cwd: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / prog), *args],
        cwd=cwd,
        env={**cli_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_dirs(root: Path, task: str = "train") -> list[Path]:
    """Single-run folders under `root`, oldest first."""
    return sorted(p for p in (root / "logs" / task / "runs").glob("*") if p.is_dir())


def metrics(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "metrics.json").read_text())
