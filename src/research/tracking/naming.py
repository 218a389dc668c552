"""Names a person reads: which overrides say what a run computes, and a run's W&B name.

Overrides that only say how a run is watched or launched (the keys tracking.identity leaves out
of the config hash) are left out, so they never split a variant or lengthen a name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from research.tracking.identity import affects_result


def meaningful_overrides(overrides: Iterable[Any]) -> list[str]:
    """The overrides (leading `+` dropped) that change what a run computes, in order."""
    texts = [str(override).lstrip("+") for override in overrides]
    return [t for t in texts if affects_result(t.partition("=")[0].lstrip("~"))]


def run_name(config: dict[str, Any], overrides: Iterable[Any]) -> str:
    """`<variant>-s<seed>` for an ablation's run, else its meaningful overrides joined with
    "," (the seed last), else `<task_name>-s<seed>`."""
    seed = config.get("seed")
    if config.get("variant"):
        return f"{config['variant']}-s{seed}"
    kept = [o for o in meaningful_overrides(overrides) if not o.startswith("variant=")]
    if config.get("trial") is not None:
        kept.insert(0, f"trial{config['trial']}")
    return ",".join([*kept, f"seed={seed}"]) if kept else f"{config.get('task_name')}-s{seed}"
