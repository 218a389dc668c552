"""The divergence guard stops at a non-finite training loss, scalar or not, and at nothing else."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from research.callbacks.divergence import DivergedError, DivergenceGuard

AT = SimpleNamespace(current_epoch=2, global_step=17)  # what the message reads from the trainer


def _check(outputs: object) -> None:
    DivergenceGuard().on_train_batch_end(AT, None, outputs, None, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_scalar_loss_stops_the_run_and_names_the_step(value: float):
    with pytest.raises(DivergedError, match=rf"became {value} at epoch 2, step 17; lower"):
        _check({"loss": torch.tensor(value, requires_grad=True) * 1})


def test_a_non_finite_element_of_a_loss_tensor_stops_the_run():
    with pytest.raises(DivergedError, match="became non-finite at epoch 2"):
        _check(torch.tensor([1.0, float("nan")]))


@pytest.mark.parametrize(
    "outputs", [{"loss": torch.tensor(0.25)}, torch.tensor([1.0, 2.0]), None, {"loss": None}]
)
def test_a_finite_or_missing_loss_goes_on(outputs: object):
    _check(outputs)
