"""An ablation file, `conf/ablation/<name>.yaml`: a base (overrides for every job), either
`variants` (name -> overrides) or `axes` (crossed: axis -> option -> overrides), the `seeds`, and
optionally `tags`, report `metrics` and the report's `baseline` variant.

Read by `research-ablate` (to plan and run it) and by `research-report` (its variants, baseline and
axes), so it imports nothing that launches jobs.
"""

from __future__ import annotations

import itertools
from typing import Any

from omegaconf import OmegaConf

from research.config.compose import group_options
from research.config.errors import ConfigError
from research.config.paths import config_dir


def load_ablation(name: str) -> dict[str, Any]:
    path = config_dir() / "ablation" / f"{name}.yaml"
    if not path.is_file():
        options = ", ".join(group_options("ablation")) or "none"
        raise ConfigError(
            f"ablation {name!r}: no conf/ablation/{name}.yaml; choose one of: {options}"
        )
    spec = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(spec, dict)
    if bool(spec.get("variants")) == bool(spec.get("axes")):
        raise ConfigError(f"ablation {name!r}: give exactly one of `variants` or `axes`")
    if not spec.get("seeds"):
        raise ConfigError(f"ablation {name!r}: `seeds` must list at least one seed")
    names = list(variants(spec))
    if spec.get("baseline") is not None and spec["baseline"] not in names:
        raise ConfigError(
            f"ablation {name!r}: baseline {spec['baseline']!r} is not one of its variants: "
            f"{', '.join(names)}"
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
