"""A run with no end (trainer.max_epochs=-1) trains until stopped; decaying schedules refuse it."""

from __future__ import annotations

import lightning as L
import pytest
import torch

from research.config.compose import check_command_line
from research.optim.factory import configure
from research.optim.schedulers import cosine_with_warmup
from research.run.build import build_task


@pytest.mark.slow  # trains for its time limit: about 3 s
def test_an_endless_run_trains_until_its_time_limit():
    (config,) = check_command_line("train", ["trainer.max_epochs=-1", "scheduler=inverse_sqrt"])
    datamodule, task = build_task(config)
    trainer = L.Trainer(
        max_epochs=-1,
        max_time={"seconds": 3},
        limit_train_batches=2,
        limit_val_batches=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(task, datamodule=datamodule)  # raised OverflowError in configure_optimizers
    assert trainer.estimated_stepping_batches == float("inf")
    assert trainer.global_step >= 2


def test_a_decaying_schedule_without_an_end_is_a_clear_error():
    params = [torch.nn.Parameter(torch.zeros(2))]
    with pytest.raises(ValueError, match="decays to the run's last step, but this run has no end"):
        configure(params, lambda p: torch.optim.SGD(p, lr=0.1), cosine_with_warmup, None)
