"""With validation twice an epoch, a mid-epoch validation can be the best checkpoint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from tests.helpers.cli import metrics, run_cli, run_dirs


@pytest.mark.slow
def test_best_checkpoint_can_come_from_a_mid_epoch_validation(workdir: Path):
    # mode=min on a rising accuracy: the best is the first validation, half way through epoch 0.
    done = run_cli(
        "research-train",
        "logger=none",
        "trainer.max_epochs=1",
        "trainer.val_check_interval=0.5",
        "trainer.enable_progress_bar=false",
        "callbacks.model_checkpoint.mode=min",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    validations = [
        (int(step), float(acc))
        for step, acc in re.findall(
            r"validation  epoch 0  step (\d+)  .*val/acc=(\d\.\d+)", done.stdout
        )
    ]
    assert len(validations) == 2 and validations[0][1] < validations[1][1], validations
    (run,) = run_dirs(workdir)
    m = metrics(run)
    saved = torch.load(run / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=True)
    (state,) = [v for k, v in saved["callbacks"].items() if k.startswith("ModelCheckpoint")]
    assert abs(float(state["best_model_score"]) - validations[0][1]) < 1e-4
    assert saved["global_step"] == validations[0][0]  # saved at the mid-epoch validation
    assert m["best"]["step"] == validations[0][0]
    assert abs(m["best"]["val/acc"] - validations[0][1]) < 1e-4
