"""A SIGTERM (SLURM's scancel) ends W&B's service with the job, so only what W&B already wrote
to the offline `.wandb` file survives: the shipped logger config makes it write every 2 s."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from research.tracking.wandb_reader import find_offline_runs, read_offline_run
from research.tracking.wandb_run import build_loggers
from tests.helpers.cli import shipped_wandb_config, wandb_written


@pytest.mark.slow  # waits for W&B's 2 s flush
def test_logged_rows_reach_the_file_while_the_run_is_still_open(tmp_path: Path):
    (logger,), run_id = build_loggers({"wandb": shipped_wandb_config()}, tmp_path, None)
    run = logger.experiment
    try:
        assert run.settings.x_transaction_log_flush_interval == 2
        run.log({"loss": 1.5})
        deadline = time.monotonic() + 10  # W&B's default interval is 15 s
        history: list = []
        while not history and time.monotonic() < deadline:
            time.sleep(0.5)
            (path,) = find_offline_runs(tmp_path)
            with contextlib.suppress(ValueError):  # no run record written yet
                history = read_offline_run(path).history
        assert history and history[0]["loss"] == 1.5, "nothing written before the run finished"
        assert read_offline_run(path).run_id == run_id
    finally:
        run.finish()
        wandb_written()  # this process's W&B service, and its token in the environment, go
