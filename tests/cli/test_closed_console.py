"""A console closed before the start (`>&-`, `2>&-`: a cron job, a daemon) never stops a run, and
its descriptor is never handed to a file the run opens (a child's output would land in it)."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.helpers.cli import BIN, cli_env, metrics, run_dirs

# The progress bar (tqdm), W&B (offline) and the logging handlers all meet the closed console.
ARGS = ["debug=limit", "trainer.enable_progress_bar=true", "trainer.enable_model_summary=false"]


@pytest.mark.slow
@pytest.mark.parametrize("closed", [">&-", ">&- 2>&-"])
def test_a_run_with_a_closed_console_completes(workdir: Path, closed: str):
    command = f"{BIN / 'research-train'} {' '.join(ARGS)} {closed}"
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=workdir,
        env=cli_env(workdir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    m = metrics(run)
    assert m["status"] == "completed", m.get("error")
    assert list((run / "wandb").glob(f"offline-run-*-{m['wandb']['run_id']}/*.wandb"))


PROBE = """
import sys
from research.cli.console import protect_console

protect_console()
print("to stdout")
print("to stderr", file=sys.stderr)
with open("probe", "w") as probe:
    probe.write(str(probe.fileno()))
"""


@pytest.mark.parametrize("fd", [1, 2])
def test_a_closed_console_descriptor_is_never_given_to_a_file(tmp_path: Path, fd: int):
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=partial(os.close, fd),
        timeout=60,
    )
    assert done.returncode == 0
    assert int((tmp_path / "probe").read_text()) > 2
