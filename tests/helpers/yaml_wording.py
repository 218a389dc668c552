"""How the YAML parser that OmegaConf loads files with words a syntax error: PyYAML's Python
parser (OmegaConf 2.3) and libyaml (OmegaConf 2.4, where PyYAML has it) say the same mistake at
the same line and column in different words."""

from __future__ import annotations

from functools import cache

import yaml
from omegaconf import OmegaConf

# PyYAML's Python parser -> libyaml, for the mistakes the tests make.
LIBYAML = {
    "mapping values are not allowed here": "mapping values are not allowed in this context",
    "expected ',' or ']', but got '<stream end>'": "did not find expected ',' or ']'",
    "expected ',' or ']', but got ':'": "did not find expected ',' or ']'",
}


@cache
def _libyaml() -> bool:
    try:
        OmegaConf.create("a: b: c")
    except yaml.YAMLError as err:
        return "in this context" in str(err)
    raise AssertionError("'a: b: c' parsed")


def parser_says(problem: str) -> str:
    """`problem` (PyYAML's Python wording) as the parser OmegaConf uses words it."""
    return LIBYAML.get(problem, problem) if _libyaml() else problem
