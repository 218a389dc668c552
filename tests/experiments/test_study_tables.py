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
