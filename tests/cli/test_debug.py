"""The debug configs run end to end and do what they say."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import metrics, run_cli, run_dirs

QUIET = ["logger=none", "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false"]


@pytest.mark.parametrize(
    ("debug", "extra", "epochs"),
    [
        ("fdr", [], 0),
        ("limit", [], 2),
        ("overfit", ["trainer.max_epochs=3"], 3),
        ("profiler", ["trainer.limit_train_batches=5"], 1),
    ],
)
@pytest.mark.slow
def test_debug_config(workdir: Path, debug: str, extra: list[str], epochs: int):
    done = run_cli("research-train", f"debug={debug}", *QUIET, *extra, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    assert metrics(run)["status"] == "completed"
    history = (run / "history.jsonl").read_text().splitlines()
    assert len(history) == max(epochs, 1)
    if debug == "profiler":
        assert "FIT Profiler Report" in done.stdout + done.stderr
