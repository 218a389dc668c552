"""Which runs a report reads: a folder of run dirs, or an ablation by name (its folder under the log
dir, read with its ablation file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from research.ablation.spec import load_ablation
from research.config.errors import ConfigError
from research.config.paths import config_dir, project_root
from research.reports.errors import ReportError


def _log_dir() -> Path:
    """Where runs log, by the same rule as conf/paths/default.yaml."""
    if os.environ.get("RESEARCH_LOG_DIR"):
        return Path(os.environ["RESEARCH_LOG_DIR"])
    return project_root() / "logs"


def resolve_source(text: str, log_dir: Path | None = None) -> tuple[Path, str | None]:
    """The folder to read, and the ablation name when `text` named one (or is an ablation's
    folder: `<log dir>/ablations/<name>`, with `+<overrides>` after the name for a run with
    extra overrides). `log_dir` defaults to the rule of conf/paths/default.yaml."""
    path = Path(text)
    if path.is_dir():
        parent = path.resolve().parent.name
        return path, path.resolve().name.split("+")[0] if parent == "ablations" else None
    if path.exists():
        raise ReportError(f"{text} is a file; pass a folder of run dirs or an ablation name")
    ablation = (log_dir or _log_dir()) / "ablations" / text
    if ablation.is_dir():
        return ablation, text.split("+")[0]
    raise ReportError(
        f"source {text!r} not found: no folder {path.absolute()} and no ablation folder "
        f"{ablation.absolute()}"
    )


def ablation_spec(name: str | None) -> dict[str, Any]:
    """conf/ablation/<name>.yaml as a dict; {} when there is none."""
    if not name:
        return {}
    if not (config_dir() / "ablation" / f"{name}.yaml").is_file():
        return {}
    try:  # the same checks research-ablate makes (a key given twice is not silently dropped)
        return load_ablation(name)
    except ConfigError as err:
        raise ReportError(str(err)) from None


def variant_names(name: str | None, spec: dict[str, Any], source: Path) -> dict[str, str]:
    """Config hash -> variant of the ablation file, for the runs of its own folder: a run that
    research-ablate reused for a renamed or re-based variant still carries its old name."""
    if not spec or not name or source.name != name:
        return {}
    from research.ablation.plan import plan

    return {job.run_id.rsplit("-s", 1)[0]: job.variant for job in plan(name, spec, [])}
