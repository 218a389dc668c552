"""Values of the right type that cannot work are refused before torch loads, in one line."""

from __future__ import annotations

import pytest

from research.config.compose import check_command_line
from research.config.errors import ConfigError


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["optimizer.lr=inf"], "optimizer.lr=inf is not a finite number"),
        (["optimizer.lr=nan"], "optimizer.lr=nan is not a finite number"),
        (["trainer.max_epochs=0"], "trainer.max_epochs=0 trains nothing; to only test"),
        (
            ["trainer.max_epochs=-1", "scheduler=cosine"],
            "trainer.max_epochs=-1 trains until stopped, but scheduler cosine_with_warmup",
        ),
        (
            ["trainer.max_epochs=-1", "scheduler=warmup_linear"],
            "scheduler linear_with_warmup decays to the run's last step",
        ),
        # Lightning's Timer refuses these only once the run dir is made.
        (["trainer.max_time=12:00"], "trainer.max_time='12:00' is not a duration; give"),
        (["trainer.max_time={hourz:1}"], "'hourz' is not a unit of time; use weeks, days"),
        (["trainer.max_time={hours:-1}"], "hours must be a number >= 0"),
        # numpy refuses a seed beyond 2**32 - 1 when the run seeds its RNGs.
        (["seed=4294967296"], "seed=4294967296 is out of range; it must be <= 4294967295"),
        # Hydra removes a group every run builds from, or a key the configs interpolate.
        (["~model"], "model is missing (removed with ~model?)"),
        (["~optimizer=adam"], "optimizer is missing (removed with ~optimizer?)"),
        (["~seed"], "seed is missing (removed with ~seed?)"),
        (["~paths.log_dir"], "paths.log_dir is missing (removed with ~paths.log_dir?)"),
        (["~paths"], "set it with paths.log_dir=<value>"),
        # Lightning would add a default checkpoint of its own, or refuse only after the run dir.
        (
            ["callbacks.model_checkpoint=null", "trainer.enable_checkpointing=true"],
            "trainer.enable_checkpointing=true but no callbacks.model_checkpoint is configured",
        ),
        (
            ["trainer.enable_checkpointing=false"],
            "trainer.enable_checkpointing=false but callbacks.model_checkpoint is configured",
        ),
    ],
)
def test_unworkable_value_is_refused_in_one_line(overrides: list[str], expected: str):
    with pytest.raises(ConfigError) as err:
        check_command_line("train", overrides)
    assert expected in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "overrides",
    [
        ["trainer.max_epochs=-1"],  # Lightning's "until stopped" with a schedule that has no end
        ["trainer.max_epochs=-1", "scheduler=inverse_sqrt"],
        ["trainer.max_epochs=-1", "trainer.max_steps=100", "scheduler=cosine"],
    ],
)
def test_endless_training_is_accepted_where_it_can_work(overrides: list[str]):
    (config,) = check_command_line("train", overrides)
    assert config["trainer"]["max_epochs"] == -1


def test_max_time_takes_what_lightning_takes():
    """A dict of timedelta units is a duration Lightning's Timer accepts too."""
    (config,) = check_command_line("train", ["trainer.max_time={hours:12,minutes:30}"])
    assert config["trainer"]["max_time"] == {"hours": 12, "minutes": 30}
