"""metrics.json: the one file per run that reports, sweeps and ablations read.

It is written at the end of every run, success or failure, so a crashed job is counted instead of
silently missing from a table.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from research.tracking.identity import config_hash, run_id
from research.tracking.provenance import git_state, package_versions
from research.tracking.run_dir import write_identity


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class RunRecord:
    """Collects what metrics.json holds while a run goes on; the job writes its `payload` once,
    when the run ends."""

    run_dir: Path
    config: dict[str, Any]
    overrides: list[str]
    started_at: str = field(default_factory=_now)
    start: float = field(default_factory=time.perf_counter)
    fields: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.config_hash = config_hash(self.config)
        self.seed = self.config.get("seed")
        self.run_id = run_id(self.config)
        self.git = git_state()
        self.versions = package_versions()

    def mark_started(self) -> None:
        write_identity(self.run_dir, self.run_id)

    def provenance(self) -> dict[str, Any]:
        """The non-config facts W&B logs next to the config."""
        return {
            "command": os.environ.get("RESEARCH_COMMAND"),
            "overrides": self.overrides,
            "run_id": self.run_id,
            "config_hash": self.config_hash,
            "git": self.git,
            "versions": self.versions,
        }

    def payload(self, status: str, error: str | None = None) -> dict[str, Any]:
        """What metrics.json holds for a run that ended with `status` (and `error`)."""
        return {
            "status": status,
            "error": error,
            "run_id": self.run_id,
            "config_hash": self.config_hash,
            "seed": self.seed,
            "task_name": self.config.get("task_name"),
            "experiment": self.config.get("experiment"),
            "variant": self.config.get("variant"),
            "trial": self.config.get("trial"),
            "command": os.environ.get("RESEARCH_COMMAND"),
            "overrides": self.overrides,
            "monitor": None,
            "mode": None,
            "best": {},
            "final": {},
            **self.fields,
            "config": self.config,
            "wall_time_s": round(time.perf_counter() - self.start, 3),
            "started_at": self.started_at,
            "finished_at": _now(),
            "git": self.git,
            "versions": self.versions,
            "run_dir": str(self.run_dir),
        }
