"""A study README's tables equal what its derive script renders from the committed run records:
a number cannot be edited by hand, nor the records change without the README."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from research.reports.readme_blocks import read_blocks, stale_blocks

EXPERIMENTS = Path(__file__).parents[2] / "experiments"
STUDIES = sorted(p.parent.name for p in EXPERIMENTS.glob("*/derive.py"))


def derive_module(study: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"{study}_derive", EXPERIMENTS / study / "derive.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("study", STUDIES)
def test_readme_tables_equal_the_derived_ones(study: str):
    readme = EXPERIMENTS / study / "README.md"
    rendered = derive_module(study).blocks()
    assert set(read_blocks(readme.read_text())) == set(rendered)
    assert stale_blocks(readme, rendered) == []


def test_xiong2020_runs_at_the_rate_its_sweep_chose():
    chosen = derive_module("xiong2020").chosen_rate()
    config = yaml.safe_load((EXPERIMENTS.parent / "conf/experiment/xiong2020.yaml").read_text())
    assert config["optimizer"]["lr"] == chosen


def _last_value(overrides: list[str], key: str) -> str | None:
    found = [o.split("=", 1)[1] for o in overrides if o.startswith(f"{key}=")]
    return found[-1] if found else None


def test_colbert_stdlib_runs_the_knobs_validation_chose():
    derive = derive_module("colbert_stdlib")
    conf = EXPERIMENTS.parent / "conf"
    recipe = yaml.safe_load((conf / "ablation/colbert_recipe.yaml").read_text())
    chosen = derive.knob_choice("colbert_recipe")
    rate = _last_value(recipe["base"] + recipe["variants"][chosen], "optimizer.lr")
    experiment = yaml.safe_load((conf / "experiment/colbert_stdlib.yaml").read_text())
    assert experiment["optimizer"]["lr"] == float(rate)
    # the budget study's knobs (dropout, schedule, document length) stay as its baseline has them
    assert derive.knob_choice("colbert_budget") == "recipe"
    dense = yaml.safe_load((conf / "ablation/colbert_dense.yaml").read_text())["variants"]
    for variant in ("dense", "dense_partition1"):
        temperature = _last_value(dense[variant], "loss.temperature")
        assert float(temperature) == derive.chosen_temperature()


def test_context_extension_trains_the_budget_validation_chose():
    chosen = derive_module("context_extension").chosen_epochs()
    conf = EXPERIMENTS.parent / "conf/experiment/context_extension.yaml"
    config = yaml.safe_load(conf.read_text())
    assert config["trainer"]["max_epochs"] == chosen == 8


@pytest.mark.parametrize(
    ("low", "high", "sign", "verdict"),
    [
        (0.5, 2.0, +1, "reproduced"),
        (-2.0, -0.5, -1, "reproduced"),
        (-2.0, -0.5, +1, "reversed"),
        (0.5, 2.0, -1, "reversed"),
        (-0.5, 2.0, +1, "not reproduced"),
        (-0.5, 2.0, -1, "not reproduced"),
    ],
)
def test_a_context_extension_claim_is_decided_by_the_side_of_0_its_interval_lies_on(
    low: float, high: float, sign: int, verdict: str
):
    derive = derive_module("context_extension")
    claim = derive.Comparison("c", "a - b", (1.0,), (0.0,), True, sign)
    assert derive.Decided(claim, (low + high) / 2, low, high, 0.01, 0.02).verdict == verdict
