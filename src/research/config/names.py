"""Checks on text from the user that ends up in a file name or a job script.

A value that names a folder (`task_name`, an ablation's variant, ...) is joined into a path: `..`
or `/` in it would write outside the log dir. An override or launcher value is written into the
SLURM batch script that submitit generates (`#SBATCH --job-name=...`): a newline in it would
become a line of that script. Both are refused, in one line, before anything is written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research.config.errors import ConfigError

# Config keys whose value becomes one folder or file name: the run and sweep dirs and the job's
# log file (conf/hydra/default.yaml), an ablation's job folders (research-ablate), an Optuna
# study's database (conf/hparams_search/optuna.yaml).
SEGMENT_KEYS = ("task_name", "variant", "hydra.job.name", "hydra.sweeper.study_name")
# Values the submitit launcher writes into a job script.
SCRIPT_NODE = "hydra.launcher"

_NAMES = {"\n": "a newline", "\r": "a carriage return", "\x00": "a NUL byte", "\t": "a tab"}


def quoted(value: object) -> str:
    """`value` as a quoted Hydra override value: quotes escaped, and the backslashes before a
    quote or at the end doubled (Hydra unescapes only those), so any path survives its parser
    and its commas or brackets stay literal."""
    text = re.sub(r"\\+(?='|$)", lambda m: m.group() * 2, str(value))
    return "'" + text.replace("'", "\\'") + "'"


def control_character(text: str) -> str | None:
    """How to name the first control character (C0, DEL, C1, line separators) in `text`."""
    for char in text:
        if unicodedata.category(char) == "Cc" or char in "\u2028\u2029":
            return _NAMES.get(char, f"the control character U+{ord(char):04X}")
    return None


def check_text(text: str, label: str) -> None:
    """`text` (called `label` in the message) holds no control character: it may be written
    into a job script."""
    found = control_character(text)
    if found is not None:
        raise ConfigError(
            f"{label} contains {found}; values are written into job scripts (SLURM), so give "
            "them on one line without control characters"
        )


def check_overrides(overrides: Iterable[str], what: str = "override") -> None:
    """Every override of a command line (or of an ablation file) is free of control characters."""
    for override in overrides:
        check_text(override, f"{what} {override!r}")


def check_segment(name: str, what: str) -> None:
    """`name` can be used as one folder or file name: not empty, not only dots, no `/`, no `..`,
    no control characters."""
    problem = _segment_problem(name)
    if problem is not None:
        raise ConfigError(
            f"{what}={name!r} {problem}; it names a folder, so use letters, digits and "
            "'_', '-', '+', '.' (no '/', no '..')"
        )


def _segment_problem(name: str) -> str | None:
    found = control_character(name)
    if found is not None:
        return f"contains {found}"
    if not name.strip("."):
        return "is only dots" if name else "is empty"
    return next((f"contains {bad!r}" for bad in ("/", "..") if bad in name), None)


def check_config_names(cfg: DictConfig) -> None:
    """The values of `SEGMENT_KEYS` are folder names and the launcher's values fit on one line
    of a job script; a key that is absent or cannot be resolved here is not checked."""
    for key in SEGMENT_KEYS:
        value = _select(cfg, key)
        if value is not None:
            check_segment(str(value), key)
    launcher = _select(cfg, SCRIPT_NODE)
    for at, value in _strings(launcher, SCRIPT_NODE):
        check_text(value, f"{at}={value!r}")


def _select(cfg: DictConfig, key: str) -> Any:
    """The resolved value at `key` (plain containers); None when absent or unresolvable."""
    try:
        node = OmegaConf.select(cfg, key)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    except OmegaConfBaseException:
        return None


def _strings(node: Any, at: str) -> Iterable[tuple[str, str]]:
    """(key path, value) of every string in a plain container."""
    if isinstance(node, str):
        yield at, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, f"{at}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, f"{at}[{index}]")
