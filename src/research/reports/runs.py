"""Finding run dirs and loading their metrics.json into one table, one row per run."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from research.tracking.run_dir import METRICS_FILE, read_history

# Overrides that say where or how a run was observed, not which variant it is.
_NOT_VARIANT = ("seed=", "ckpt_path=", "logger", "trainer.enable_", "hydra.", "paths.", "tags=")


class NoRunsError(ValueError):
    """The source folder holds no run directories."""


def find_run_dirs(source: Path) -> list[Path]:
    """Folders under `source` (at any depth) that hold a metrics.json of a training run."""
    return sorted(p.parent for p in Path(source).rglob(METRICS_FILE) if p.parent.name != "report")


def variant_of(metrics: dict[str, Any]) -> str:
    """An ablation's variant name, else the run's overrides minus the seed and bookkeeping."""
    if metrics.get("variant"):
        return str(metrics["variant"])
    kept = sorted(o for o in metrics.get("overrides", []) if not o.startswith(_NOT_VARIANT))
    return ",".join(kept) or "default"


def _row(run_dir: Path) -> dict[str, Any]:
    try:
        metrics = json.loads((run_dir / METRICS_FILE).read_text())
    except (OSError, ValueError) as err:
        warnings.warn(f"{run_dir / METRICS_FILE} unreadable ({err}); counted failed", stacklevel=2)
        return {"run_dir": str(run_dir), "status": "failed", "variant": "unreadable", "seed": None}
    row = {
        "run_dir": str(run_dir),
        "status": metrics.get("status", "failed"),
        "variant": variant_of(metrics),
        "seed": metrics.get("seed"),
        "run_id": metrics.get("run_id"),
        "monitor": metrics.get("monitor"),
        "mode": metrics.get("mode"),
        "error": metrics.get("error"),
        "finished_at": metrics.get("finished_at"),
        "history": read_history(run_dir),
    }
    for part in ("best", "final"):
        for key, value in (metrics.get(part) or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                row[f"{part}.{key}"] = float(value)
    return row


def load_runs(source: Path) -> pd.DataFrame:
    """One row per run; a run id seen several times (a re-run, a resume) keeps its newest
    completed attempt, or its newest attempt if none completed."""
    source = Path(source)
    if not source.is_dir():
        raise NoRunsError(f"{source} is not a folder")
    dirs = find_run_dirs(source)
    if not dirs:
        raise NoRunsError(f"no run dirs (folders with {METRICS_FILE}) under {source}")
    runs = pd.DataFrame([_row(d) for d in dirs])
    runs["_done"] = runs["status"] == "completed"
    runs = runs.sort_values(["_done", "finished_at"], na_position="first")
    keyed = runs[runs["run_id"].notna()].drop_duplicates("run_id", keep="last")
    runs = pd.concat([keyed, runs[runs["run_id"].isna()]]).drop(columns="_done")
    return runs.sort_values(["variant", "seed"], na_position="last").reset_index(drop=True)
