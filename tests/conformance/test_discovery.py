"""Hydra finds research's plugins: by scanning the `hydra_plugins` namespace package (Hydra 1.3
and 1.4), and through the `hydra.plugins` entry points that pyproject.toml declares (Hydra 1.4
reads them; it asks plugin authors to move to them, and needs them where its scan cannot list an
editable install)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hydra.core.plugins import Plugins
from hydra.plugins.plugin import Plugin

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own TOML reader
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
PLUGINS = {
    "hydra_plugins.research_configs.declared_source": [
        "DeclaredConfigSource",
        "ResearchSearchPath",
    ],
    "hydra_plugins.research_launcher.slurm_launcher": ["RankZeroSlurmLauncher"],
    "hydra_plugins.research_sweeper.list_sweeper": ["ListSweeper"],
    "hydra_plugins.research_sweeper.optuna_sweeper": ["OptunaStudySweeper"],
}
EXPECTED = sorted(f"{module}:{name}" for module, names in PLUGINS.items() for name in names)


def _ours(module: str) -> bool:
    return module.startswith("hydra_plugins.research_")


def test_hydra_discovers_every_plugin_and_no_other():
    discovered = sorted(
        f"{c.__module__}:{c.__name__}" for c in Plugins.instance().discover() if _ours(c.__module__)
    )
    assert discovered == EXPECTED


def test_pyproject_declares_every_plugin_as_an_entry_point():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["hydra.plugins"]
    assert sorted(declared.values()) == EXPECTED
    assert all(name.startswith("research_") for name in declared)


@pytest.mark.parametrize("entry", EXPECTED)
def test_each_entry_point_names_a_concrete_plugin_class(entry: str):
    module, _, name = entry.partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type) and issubclass(cls, Plugin)
    assert not getattr(cls, "__abstractmethods__", None), f"{entry} is abstract"
