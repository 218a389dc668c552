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
