"""The W&B run starts in a thread while the job builds its data and model; the job waits for it
however the build ends, so a failed build still has a run to mark failed."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import pytest

from research import compat
from research.run.signals import Interrupted, signals_raise
from research.tracking.wandb_reader import read_offline_run
from research.tracking.wandb_run import build_loggers, finish_loggers, provenance_logged
from tests.helpers.cli import wandb_written

WANDB = {
    "_target_": "lightning.pytorch.loggers.WandbLogger",
    "project": "research",
    "mode": "offline",
    "settings": {"silent": True},
    "_convert_": "all",
}


class BuildFailed(Exception):
    pass


def test_a_failed_build_waits_for_the_run_which_is_then_marked_failed(tmp_path: Path):
    (logger,), run_id = build_loggers({"wandb": WANDB}, tmp_path, None)
    started_in_block = None
    with pytest.raises(BuildFailed), provenance_logged([logger], {"seed": 3}, {"git": "abc"}):
        started_in_block = compat.wandb_logger_started(logger)
        raise BuildFailed("no data")
    assert started_in_block is False  # wandb.init had not returned: it runs beside the block
    assert compat.wandb_logger_started(logger)
    finish_loggers([logger], 1, {"status": "failed"})
    wandb_written()
    logged = read_offline_run(tmp_path)
    assert (logged.run_id, logged.exit_code, logged.summary["status"]) == (run_id, 1, "failed")
    assert (logged.config["seed"], logged.config["git"]) == (3, "abc")


def test_a_wandb_start_error_is_raised_once_the_block_is_done(tmp_path: Path):
    (logger,), _ = build_loggers({"wandb": {**WANDB, "mode": "bogus"}}, tmp_path, None)
    built = []
    with pytest.raises(Exception, match="mode"), provenance_logged([logger], {}, {}):
        built.append("model")
    assert built == ["model"]
    assert not compat.wandb_logger_started(logger)


def test_the_blocks_own_error_wins_over_a_wandb_start_error(tmp_path: Path, caplog):
    (logger,), _ = build_loggers({"wandb": {**WANDB, "mode": "bogus"}}, tmp_path, None)
    with (
        caplog.at_level(logging.WARNING, logger="research.tracking.wandb_run"),
        pytest.raises(BuildFailed),
        provenance_logged([logger], {}, {}),
    ):
        raise BuildFailed("no data")
    assert "the loggers did not start either" in caplog.text and "mode" in caplog.text


@pytest.mark.slow  # a signal to this process while a second W&B run starts
def test_a_signal_while_waiting_for_wandb_still_lets_the_run_start(tmp_path: Path):
    (logger,), _ = build_loggers({"wandb": WANDB}, tmp_path, None)
    main = threading.main_thread().ident
    # Ctrl-C once the block is done, while wandb.init (~1 s) is still running.
    ctrl_c = threading.Timer(0.05, signal.pthread_kill, (main, signal.SIGINT))
    with signals_raise(), pytest.raises(Interrupted), provenance_logged([logger], {}, {}):
        ctrl_c.start()
    assert compat.wandb_logger_started(logger)  # waited once more: the run exists to be ended
    finish_loggers([logger], 130, {"status": "interrupted"})
    wandb_written()
    assert read_offline_run(tmp_path).exit_code == 130
