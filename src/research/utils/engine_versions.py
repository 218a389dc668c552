"""The public APIs of Hydra and OmegaConf that changed between the releases the project supports
(hydra-core 1.3 with OmegaConf 2.3; hydra-core 1.4 with OmegaConf 2.4), chosen in one place.

Each switch follows the newer release's upgrade notes: OmegaConf 2.4 renamed
`register_new_resolver` to `register_resolver` (whose 2.3 namesake is the legacy string-argument
API); Hydra 1.4 deprecated `version_base` (its defaults are 1.3's), added an execution allow-list
for config-selected targets, and turned `hydra.job.override_dirname` into an interpolation of the
`hydra_override_dirname` resolver.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any


def _major_minor(version: str) -> tuple[int, int]:
    major, minor, *_ = version.split(".")
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def hydra_version() -> str:
    """The installed hydra-core's version, as Hydra states it."""
    import hydra

    return str(hydra.__version__)


@cache
def hydra_14() -> bool:
    """True on hydra-core >= 1.4 (its release candidates included)."""
    return _major_minor(hydra_version()) >= (1, 4)


@cache
def omegaconf_24() -> bool:
    """True on omegaconf >= 2.4 (its release candidates included)."""
    import omegaconf

    return _major_minor(omegaconf.__version__) >= (2, 4)


def version_base() -> dict[str, str]:
    """The `version_base` keyword for `hydra.main` and `initialize_config_dir`: 1.3's defaults,
    named on Hydra 1.3 (which otherwise falls back to 1.1's and warns) and left out on 1.4 (whose
    defaults they are, and which warns that the parameter goes in 1.5)."""
    return {} if hydra_14() else {"version_base": "1.3"}


def register_resolver(name: str, resolver: Callable[..., Any]) -> None:
    """Register an OmegaConf resolver that takes typed arguments (`${name:1,2}` passes ints)."""
    from omegaconf import OmegaConf

    if omegaconf_24():
        OmegaConf.register_resolver(name, resolver)
    else:
        OmegaConf.register_new_resolver(name, resolver)


def execution_whitelist(targets: Iterable[str]) -> contextlib.AbstractContextManager[Any]:
    """Within the block, Hydra's `instantiate` (and the logging Hydra configures) may call only
    `targets`, through Hydra 1.4's execution allow-list; Hydra 1.3 has none, and calls any."""
    if not hydra_14():
        return contextlib.nullcontext()
    from hydra.utils import execution_whitelist as allow

    return allow(sorted(set(targets)))
