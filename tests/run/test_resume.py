"""Checkpoints of another model, or that would run code when loaded, are refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from research.config.compose import check_command_line
from research.run.build import build_task
from research.run.resume import check_fits, model_family
from research.tracking.checkpoints import CheckpointError, read_checkpoint


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("echo this should never run",))


def test_a_pickle_that_would_run_code_is_refused_without_advice_to_allow_it(tmp_path: Path):
    path = tmp_path / "evil.ckpt"
    torch.save({"state_dict": {}, "extra": _RunsCode()}, path)
    with pytest.raises(CheckpointError) as err:
        read_checkpoint(path)
    message = str(err.value)
    assert "was refused: it holds the object posix.system" in message
    assert "weights_only" not in message and "\n" not in message


def test_a_checkpoint_of_another_model_family_names_both(tmp_path: Path):
    (transformer,) = check_command_line("train", ["model=transformer_cls", "data=synthetic_recall"])
    (cnn,) = check_command_line("train", [])
    _, saved_task = build_task(transformer)
    _, task = build_task(cnn)
    checkpoint = {
        "state_dict": saved_task.state_dict(),
        "research": {"model": model_family(transformer)},
    }
    with pytest.raises(CheckpointError) as err:
        check_fits(tmp_path / "x.ckpt", checkpoint, task, model_family(cnn))
    assert str(err.value) == (
        f"checkpoint {tmp_path / 'x.ckpt'} holds a ClassificationModule(SequenceClassifier) "
        "model; this config builds a ClassificationModule(CNN)"
    )
    del checkpoint["research"]  # a checkpoint from before the family was stored
    with pytest.raises(CheckpointError, match="does not fit this config's ClassificationModule"):
        check_fits(tmp_path / "x.ckpt", checkpoint, task, model_family(cnn))


def test_a_checkpoint_of_other_sizes_names_the_first_weight_and_both_shapes(tmp_path: Path):
    (small,) = check_command_line("train", ["model.net.channels=[8,16]"])
    (cnn,) = check_command_line("train", [])
    _, saved_task = build_task(small)
    _, task = build_task(cnn)
    checkpoint = {"state_dict": saved_task.state_dict(), "research": {"model": model_family(cnn)}}
    with pytest.raises(CheckpointError) as err:
        check_fits(tmp_path / "x.ckpt", checkpoint, task, model_family(cnn))
    assert str(err.value) == (
        f"checkpoint {tmp_path / 'x.ckpt'} does not fit this config's ClassificationModule(CNN): "
        "net.features.0.weight has shape [8, 1, 3, 3] in the checkpoint and [32, 1, 3, 3] in "
        "the model (10 other weights differ too); use the checkpoint with the config it was "
        "trained with"
    )
