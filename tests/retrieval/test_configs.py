"""The searchers' declarations: `check_search` validates a `search` option in one line, before
torch; the searcher constructors take the same declarations."""

from __future__ import annotations

import subprocess
import sys

import pytest

from research.config.errors import ConfigError
from research.retrieval.configs import SEARCH_CONFIGS, VoyagerConfig, check_search


@pytest.mark.parametrize(
    ("search", "message"),
    [
        (
            {"kind": "faiss"},
            "model.search.kind='faiss' is not valid; choose one of: exact, voyager",
        ),
        ({"kind": "exact", "M": 8}, "model.search.M is not a parameter of exact; valid: kind, k,"),
        ({"k": 0}, "model.search.k=0 must be a positive integer"),
        ({"k": True}, "model.search.k=True must be a positive integer"),
        ({"kind": "voyager", "M": 1}, "model.search.M=1 is out of range; it must be >= 2"),
        ({"memory_budget_mb": "x"}, "model.search.memory_budget_mb='x' must be float"),
    ],
)
def test_check_search_fails_in_one_line(search, message):
    with pytest.raises(ConfigError) as err:
        check_search("model", search)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_check_search_accepts_every_declared_parameter():
    check_search("model", {"kind": "exact", "k": 100, "memory_budget_mb": 64})
    check_search("model", {"kind": "voyager", "k": 10, **VoyagerConfig().as_dict()})
    check_search("model", {})


def test_each_kind_is_implemented_by_its_declared_target():
    from research.retrieval.searchers import build_searcher

    for kind, declaration in SEARCH_CONFIGS.items():
        searcher = build_searcher(kind)
        assert searcher.kind == kind and type(searcher).__name__ in declaration.targets[0]
        assert searcher.config == declaration()
    with pytest.raises(ConfigError, match="config must be a VoyagerConfig"):
        type(build_searcher("voyager"))(SEARCH_CONFIGS["exact"]())


@pytest.mark.slow  # a fresh interpreter: about 3 s
def test_the_package_and_the_declarations_import_without_torch():
    code = (
        "import sys, research.retrieval, research.retrieval.configs, research.data.configs; "
        "print('torch' in sys.modules, callable(research.retrieval.load_searcher), "
        "'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]
