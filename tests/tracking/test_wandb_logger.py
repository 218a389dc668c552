"""research's WandbLogger: the values logged at one step reach W&B as one row, in order, and
nothing held is lost when the run ends, whichever way it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from research.tracking.wandb_logger import WandbLogger
from research.tracking.wandb_reader import read_offline_run
from research.tracking.wandb_run import build_loggers, finish_loggers
from tests.helpers.cli import shipped_wandb_config, wandb_written


def _shipped_logger(run_dir: Path) -> WandbLogger:
    (logger,), _ = build_loggers({"wandb": shipped_wandb_config()}, run_dir, None)
    assert isinstance(logger, WandbLogger)
    return logger


def _rows(run_dir: Path) -> list[dict]:
    wandb_written()
    history = read_offline_run(run_dir).history
    return [{k: v for k, v in row.items() if not k.startswith("_")} for row in history]


def test_the_values_of_one_step_make_one_row_in_order(tmp_path: Path):
    logger = _shipped_logger(tmp_path)
    logger.log_metrics({"lr": 0.1}, step=9)  # the learning-rate monitor, before the step
    logger.log_metrics({"train/loss": 2.0, "epoch": 0}, step=9)  # the step's own values
    logger.log_metrics({"val/acc": 0.5, "epoch": 0}, step=12)
    logger.log_metrics({"train/acc": 0.4, "epoch": 0}, step=12)
    logger.log_metrics({"note": 1})  # no step: a row of its own, after the held one
    logger.log_metrics({"lr": 0.05}, step=19)
    finish_loggers([logger], 0, {})
    assert _rows(tmp_path) == [
        {"lr": 0.1, "train/loss": 2.0, "epoch": 0, "trainer/global_step": 9},
        {"val/acc": 0.5, "train/acc": 0.4, "epoch": 0, "trainer/global_step": 12},
        # W&B fills in the last step (Lightning defines trainer/global_step with step_sync)
        {"note": 1, "trainer/global_step": 12},
        {"lr": 0.05, "trainer/global_step": 19},  # held at the end, written before finishing
    ]


@pytest.mark.parametrize("status", ["success", "failed"])
def test_lightning_finalizing_the_logger_writes_the_held_row(tmp_path: Path, status: str):
    """Lightning finalizes its loggers at the end of fit and when fit raises."""
    logger = _shipped_logger(tmp_path)
    logger.log_metrics({"val/acc": 0.5}, step=3)
    logger.finalize(status)
    logger.experiment.finish()  # W&B's own finish: only what finalize wrote is there
    assert _rows(tmp_path) == [{"val/acc": 0.5, "trainer/global_step": 3}]
