"""Typed schemas: every mistake is one line naming the key and what is valid."""

from __future__ import annotations

import subprocess
import sys

import pytest

from research.config.compose import check_command_line, expand
from research.config.errors import ConfigError
from research.config.resolvers import run_suffix

BAD = [
    (["optimizer=sgd", "optimizer.nesterov=true", "optimizer.momentum=0"], "momentum > 0"),
    (["optimizer=sgd", "optimizer.nesterov=true", "optimizer.dampening=0.1"], "dampening = 0"),
    (["optimizer=adam", "optimizer.betas=[0.9,1.5]"], "optimizer.betas"),
    (["loss.label_smoothing=1.5"], "loss.label_smoothing=1.5 is out of range"),
    (["loss.reduction=avg"], "choose one of: mean, sum, none"),
    (["trainer.precision=bf17"], "trainer.precision='bf17' is not valid"),
    (["model.net.kernel_sizes=[3]"], "give one kernel size per conv block"),
    (["seed=-1"], "seed=-1 is out of range"),
    (["data.batch_size=0"], "data.batch_size=0 is out of range"),
    (["scheduler=cosine", "scheduler.min_lr_ratio=2"], "scheduler.min_lr_ratio=2.0"),
    (["model.top_k=11"], "model.top_k=11 must be <= num_classes=10"),
    (["data=imagenet"], "data=imagenet: no such config in conf/data/; choose one of: cifar10"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD)
def test_invalid_values_fail_in_one_line(overrides: list[str], message: str):
    with pytest.raises(ConfigError) as err:
        check_command_line("train", overrides)
    assert "\n" not in str(err.value)
    assert message in str(err.value)


@pytest.mark.parametrize(
    "overrides",
    [[], ["seed=0"], ["optimizer=adamw", "optimizer.lr=0.01"], ["data=cifar10", "trainer=ddp_sim"]],
)
def test_valid_configs_pass(overrides: list[str]):
    (config,) = check_command_line("train", overrides)
    assert config["seed"] == (0 if overrides != ["seed=0"] else 0)


def test_sweeps_check_every_value_once():
    assert len(expand(["a=1,2", "b=3,4"])) == 3
    with pytest.raises(ConfigError, match="optimizer.lr=-1.0"):
        check_command_line("train", ["optimizer.lr=0.1,0.2,-1"])


def test_run_suffix_is_path_safe_and_distinct():
    a = run_suffix("model.net.channels=[16,32]," + "x" * 200)
    b = run_suffix("model.net.channels=[16,32]," + "x" * 199 + "y")
    assert a != b and len(a) < 100
    assert not any(ch in a for ch in "/=,[]")


def test_checking_a_command_line_does_not_import_torch():
    code = (
        "import sys; from research.config.compose import check_command_line;"
        "check_command_line('train', ['optimizer=sgd']);"
        "print(sorted(m for m in ('torch', 'lightning') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
