"""The files a run leaves in its directory, and finding earlier runs to resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research.tracking.run_lock import in_use
from research.utils.atomic import write_json_atomic

METRICS_FILE = "metrics.json"
HISTORY_FILE = "history.jsonl"
# Step rows of the optional gradient-norm callback (research.callbacks.grad_norms.GradNormLogger).
GRAD_NORM_FILE = "grad_norms.jsonl"
CHECKPOINT_DIR = "checkpoints"
# Written when a run starts (write_identity): marks a run dir that has no metrics.json yet.
STARTED_FILE = ".research.json"


def read_metrics(run_dir: Path) -> dict[str, Any] | None:
    """A run's metrics.json, or None when it has none, it cannot be parsed or it is not an
    object (a damaged or foreign file)."""
    try:
        data = json.loads((run_dir / METRICS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_history(run_dir: Path, name: str = HISTORY_FILE) -> list[dict[str, Any]]:
    """The rows a run logged in `name` (epoch rows by default); a torn last line (killed
    process) is skipped."""
    path = run_dir / name
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _saved_run_id(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / STARTED_FILE).read_text()).get("run_id")
    except (OSError, ValueError):
        return None


def write_identity(run_dir: Path, run_id: str) -> None:
    """Marks a run dir with its id at start, so an unfinished run can be found for resume."""
    write_json_atomic(run_dir / STARTED_FILE, {"run_id": run_id})


def find_unfinished_run(log_root: Path, run_id: str, exclude: Path | None = None) -> Path | None:
    """The newest run dir under `log_root` with this run id, a `last.ckpt` and no `completed`
    status: the run that `ckpt_path=last` continues."""
    candidates = []
    for marker in log_root.rglob(STARTED_FILE):
        other = marker.parent
        if other == exclude or _saved_run_id(other) != run_id:
            continue
        status = (read_metrics(other) or {}).get("status")
        if (other / CHECKPOINT_DIR / "last.ckpt").is_file() and status != "completed":
            candidates.append(other)
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def other_attempt(
    log_root: Path, run_id: str, exclude: Path | None = None
) -> tuple[Path, str] | None:
    """A run dir under `log_root` (other than `exclude`) with this run id that completed
    (`completed`) or that a live process runs now (`running`): another job of that run id
    would only repeat it."""
    for marker in sorted(log_root.rglob(STARTED_FILE)):
        other = marker.parent
        if (exclude and other.resolve() == exclude.resolve()) or _saved_run_id(other) != run_id:
            continue
        if (read_metrics(other) or {}).get("status") == "completed":
            return other, "completed"
        if in_use(other):
            return other, "running"
    return None


def find_resume_checkpoint(run_dir: Path, log_root: Path, run_id: str) -> Path | None:
    """`last.ckpt` of this run dir (a resumed or requeued job) or of the newest other unfinished
    run with the same id (a sweep job restarted by hand); None when there is nothing to resume."""
    own = run_dir / CHECKPOINT_DIR / "last.ckpt"
    if own.is_file():
        return own
    other = find_unfinished_run(log_root, run_id, exclude=run_dir)
    return other / CHECKPOINT_DIR / "last.ckpt" if other else None
