"""Hydra's conformance suite for config sources (`hydra.test_utils.config_source_common_tests`),
run on research's `DeclaredConfigSource`.

The suite reads a fixed tree of configs that Hydra keeps in its repository
(tests/test_apps/config_source_test/dir), not in the wheel: config_source/ here is the same tree.
Its files name no `_target_`, so the source reads them as Hydra's file source would; what the
source adds to a node with a declared target is tested in tests/config/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.test_utils.config_source_common_tests import ConfigSourceTestSuite

from hydra_plugins.research_configs.declared_source import SCHEME, DeclaredConfigSource

TREE = Path(__file__).resolve().parent / "config_source"


@pytest.mark.parametrize(
    ("type_", "path"),
    [
        pytest.param(DeclaredConfigSource, f"{SCHEME}://{TREE}", id="research"),
        # Hydra builds a source from a search-path entry with its scheme; research's own code
        # passes a bare folder, which the source reads as its own scheme.
        pytest.param(DeclaredConfigSource, str(TREE), id="research-bare-path"),
    ],
)
class TestDeclaredConfigSource(ConfigSourceTestSuite):
    pass
