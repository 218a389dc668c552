"""An ablation file, `conf/ablation/<name>.yaml`: a base (overrides for every job), either
`variants` (name -> overrides) or `axes` (crossed: axis -> option -> overrides), the `seeds`, and
optionally `tags`, report `metrics` and the report's `baseline` variant.

Read by `research-ablate` (to plan and run it) and by `research-report` (its variants, baseline and
axes), so it imports nothing that launches jobs. Every mistake in the file is refused in one line
naming the file and the key before any job is planned: a variant's name becomes a folder and a
`variant=<name>` override, its overrides reach the jobs as they are written.
"""

from __future__ import annotations

import difflib
import itertools
from pathlib import Path
from typing import Any

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from research.config.errors import ConfigError, one_line
from research.config.names import check_overrides, check_segment
from research.config.paths import config_dir, group_options
from research.config.schema import MAX_SEED

KEYS = ("base", "variants", "axes", "seeds", "tags", "metrics", "baseline")
# What research-ablate sets in every job itself, and where a user says what they meant instead.
SET_PER_JOB = {
    "seed": "each job's seed is one of the file's `seeds` (--seeds picks some, --until-decided "
    "adds more)",
    "variant": "each job's variant is its name in the file (--only picks some)",
    "group": "the W&B group is the ablation's folder name",
    "tags": "each job's tags are the file's `tags` plus 'ablation' and its name",
}


def check_not_set_per_job(overrides: list[str], where: str) -> None:
    """Refuse an override of a key research-ablate sets in every job: the job's own value would
    win without a word (and an extra one would still name the ablation's folder)."""
    for override in overrides:
        key = override.lstrip("+~").partition("=")[0]
        if key in SET_PER_JOB:
            raise ConfigError(
                f"{where}{override}: research-ablate sets {key} in every job: {SET_PER_JOB[key]}"
            )


def load_ablation(name: str) -> dict[str, Any]:
    check_segment(name, "ablation")  # it names logs/ablations/<name>/
    path = config_dir() / "ablation" / f"{name}.yaml"
    if not path.is_file():
        options = ", ".join(group_options("ablation")) or "none"
        raise ConfigError(
            f"ablation {name!r}: no conf/ablation/{name}.yaml; choose one of: {options}"
        )
    spec = _read(path)
    if bool(spec.get("variants")) == bool(spec.get("axes")):
        raise ConfigError(f"{path}: give exactly one of `variants` or `axes`")
    _check_lists(path, spec)
    _check_seeds(path, spec.get("seeds"))
    names = list(_checked_variants(path, spec))
    if spec.get("baseline") is not None and spec["baseline"] not in names:
        raise ConfigError(
            f"{path}: baseline {spec['baseline']!r} is not one of its variants: {', '.join(names)}"
        )
    return spec


def variants(spec: dict[str, Any]) -> dict[str, list[str]]:
    """Named override sets; axes are crossed into names like `sgd+no_norm`."""
    if spec.get("variants"):
        return {str(k): list(v or []) for k, v in spec["variants"].items()}
    axes = [list(options.items()) for options in spec["axes"].values()]
    crossed = {}
    for combo in itertools.product(*axes):
        crossed["+".join(str(k) for k, _ in combo)] = [o for _, ovr in combo for o in ovr or []]
    return crossed


def _read(path: Path) -> dict[str, Any]:
    """The file as a dict with only known keys; a YAML error (duplicate keys included) in one
    line with its position."""
    try:
        spec = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except yaml.YAMLError as err:
        raise ConfigError(_yaml_error(err, path)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"{path}: {one_line(err)}") from None
    if not isinstance(spec, dict):
        raise ConfigError(f"{path}: an ablation file is a mapping of the keys {', '.join(KEYS)}")
    for key in spec:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ConfigError(f"{path}: unknown key {key!r}; {hint}valid keys: {', '.join(KEYS)}")
    return spec


def _opens_a_collection(err: yaml.YAMLError, path: Path) -> bool:
    """Whether the parser stopped at a `[` or `{` (an override's value inside a flow list). Read
    from the file: libyaml's message (OmegaConf 2.4's parser) does not say what it found."""
    mark = getattr(err, "problem_mark", None)
    if mark is None:
        return False
    lines = path.read_text(encoding="utf-8").splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    return line[mark.column : mark.column + 1] in ("[", "{")


def _yaml_error(err: yaml.YAMLError, path: Path) -> str:
    """The parser's problem with its file, line and column; how to fix the two mistakes an
    ablation file invites (a repeated key, an unquoted override with brackets)."""
    problem = str(getattr(err, "problem", None) or "")
    if "duplicate key" in problem:
        hint = "; give each key once (YAML would keep only the last)"
    elif _opens_a_collection(err, path):
        hint = (
            '; quote an override that holds a list or a dict, e.g. ["optimizer.betas=[0.9,0.99]"]'
        )
    else:
        hint = ""
    return one_line(err) + hint


def _check_lists(path: Path, spec: dict[str, Any]) -> None:
    """`base`, `tags` and `metrics` are lists of strings; base's overrides on one line each."""
    for key in ("base", "tags", "metrics"):
        _strings(path, key, spec.get(key))


def _strings(path: Path, key: str, value: Any) -> list[str]:
    """`value` (at `key`) as a list of overrides or names: null, or a list of one-line strings.
    A nested list or mapping is YAML reading an unquoted override's brackets or colon."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{path}: {key} is {value!r}; give a list, e.g. [a, b], or null")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(
                f"{path}: {key}[{index}] is {item!r}, not a string; write each item as one "
                "string, quoted when it holds brackets, braces or ': ', e.g. "
                '"optimizer.betas=[0.9,0.99]"'
            )
    check_overrides(value, f"{path}: {key}:")
    if key == "base" or key.startswith(("variants.", "axes.")):
        check_not_set_per_job(value, f"{path}: {key}: ")
    return value


def _check_seeds(path: Path, seeds: Any) -> None:
    valid = f"integers from 0 to {MAX_SEED}, each once"
    if not isinstance(seeds, list) or not seeds:
        raise ConfigError(f"{path}: seeds is {seeds!r}; give a list of {valid}, e.g. [0, 1, 2]")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise ConfigError(f"{path}: seeds: {seed!r} is not a valid seed; give {valid}")
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ConfigError(
            f"{path}: seeds: {', '.join(map(str, repeated))} given twice; give {valid}"
        )


def _checked_variants(path: Path, spec: dict[str, Any]) -> dict[str, list[str]]:
    """The variants, after checking each name (a folder and a `variant=` value) and each
    override list; crossed axes must give distinct names."""
    if spec.get("variants"):
        for name, overrides in _mapping(path, "variants", spec["variants"]).items():
            _check_name(path, "variant", name)
            _strings(path, f"variants.{name}", overrides)
    else:
        for axis, options in _mapping(path, "axes", spec["axes"]).items():
            _check_name(path, "axis", axis)
            for option, overrides in _mapping(path, f"axes.{axis}", options).items():
                _check_name(path, f"axes.{axis} option", option)
                _strings(path, f"axes.{axis}.{option}", overrides)
    named = variants(spec)
    combos = 1
    for options in (spec.get("axes") or {}).values():
        combos *= len(options)
    if spec.get("axes") and len(named) < combos:
        raise ConfigError(
            f"{path}: axes: crossing the options gives the same name twice; avoid '+' in "
            "option names"
        )
    return named


def _mapping(path: Path, key: str, value: Any) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"{path}: {key} is {value!r}; give a mapping of names to override lists, e.g. "
            "{sgd: [optimizer=sgd], adam: []}"
        )
    return value


def _check_name(path: Path, what: str, name: Any) -> None:
    """A variant's (or axis option's) name: a folder name that Hydra reads back as the same
    string in `variant=<name>`."""
    text = str(name)
    check_segment(text, f"{path}: {what}")
    try:
        value = OverridesParser.create().parse_override(f"variant={text}").value()
    except HydraException:
        value = None
    if value != text or "${" in text:
        raise ConfigError(
            f"{path}: {what} {text!r} is not a plain name (it is passed as variant={text}); "
            "use letters, digits and '_', '-', '+', '.'"
        )
