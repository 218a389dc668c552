"""Hydra's own sweep and search-path syntax works in the pre-check as it does in Hydra: the
configs checked before a multirun are the ones its jobs will run."""

from __future__ import annotations

from pathlib import Path

import pytest

from research.config.compose import check_command_line, compose_all, hydra_node, planned_jobs
from research.config.errors import ConfigError


def _plan(overrides: list[str]) -> list[list[str]] | None:
    return planned_jobs(hydra_node(compose_all("train", overrides)[0]), overrides)


@pytest.mark.slow
def test_glob_checks_and_plans_every_matching_option():
    configs = compose_all("train", ["optimizer=glob(adam*)"])
    assert [c.optimizer._target_ for c in configs] == ["torch.optim.Adam", "torch.optim.AdamW"]
    assert _plan(["optimizer=glob(adam*)", "seed=1,2"]) == [
        ["optimizer=adam", "seed=1"],
        ["optimizer=adam", "seed=2"],
        ["optimizer=adamw", "seed=1"],
        ["optimizer=adamw", "seed=2"],
    ]


def test_a_shuffled_sweep_has_no_known_launch_order():
    """Hydra draws a shuffled sweep's order when it launches: a plan made before would name the
    wrong jobs as never started."""
    assert _plan(["seed=shuffle(0,1,2)"]) is None


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["seed=interval(0,1)"], "seed=interval(0,1): interval() samples a range, which only a"),
        (["seed=range(0,4,0)"], "seed=range(0,4,0): range() arg 3 must not be zero"),
        (["seed=range(3,0)"], "seed=range(3,0) sweeps no value"),
    ],
)
def test_a_sweep_the_basic_sweeper_cannot_run_is_one_line(overrides: list[str], expected: str):
    with pytest.raises(ConfigError) as err:
        _plan(overrides)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_hydra_searchpath_adds_a_users_own_configs(tmp_path: Path):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 7\n")
    searchpath = f"hydra.searchpath=[file://{tmp_path}]"
    (config,) = check_command_line("train", [searchpath, "experiment=mine"])
    assert config["seed"] == 7
    with pytest.raises(ConfigError) as err:
        check_command_line("train", [searchpath, "experiment=mien"])
    assert "experiment=mien: no such config in conf/experiment/ or hydra.searchpath" in str(
        err.value
    )
    assert "mine" in str(err.value).split("choose one of: ")[1].split(", ")
