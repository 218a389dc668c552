"""Finding run dirs under a folder and loading each one's metrics.json into one row per run.

A run that left no readable metrics.json (killed, or a corrupt file) is counted as failed with a
warning naming the file, never skipped: a table that silently drops failures overstates a method.
A run a live process still holds (its run dir's lock) is shown as `running`, with a warning, and
left out of the means and the failure counts.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from research.reports import consistency
from research.reports.checks import checked, finite
from research.reports.errors import ReportError, RunsWarning
from research.tracking.naming import meaningful_overrides
from research.tracking.run_dir import HISTORY_FILE, METRICS_FILE, STARTED_FILE, read_history
from research.tracking.run_lock import in_use

# "pruned": a search trial its study's pruner stopped; "interrupted": a run a signal stopped
# (resumable). Both are left out of the means like a failure.
STATUSES = ("completed", "failed", "diverged", "interrupted", "pruned")
# Not an outcome: a run whose process is still going (no table column counts it).
RUNNING = "running"
_RUN_ID = re.compile(r"^(?P<hash>[0-9a-f]+)-s(?P<seed>-?\d+)$")
_WANDB_FIELDS = ("project", "group", "mode", "run_id")
_GIT_FIELDS = ("commit", "dirty")  # the code a run ran: a report's provenance cites it


def order_variants(variants: Iterable[str]) -> list[str]:
    """ "default" first, then by name: the order of table rows, bars and legend entries."""
    return sorted(set(variants), key=lambda v: (v != "default", v))


def find_run_dirs(source: Path) -> list[Path]:
    """Folders at any depth under `source` with a metrics.json, or with the start marker of a
    run that never wrote one."""
    markers = [*source.rglob(METRICS_FILE), *source.rglob(STARTED_FILE)]
    return sorted({marker.parent for marker in markers})


def variant_of(metrics: dict[str, Any]) -> str:
    """An ablation's variant name, else the run's overrides minus the seed and bookkeeping
    overrides, sorted and joined with ","; "default" when nothing is left."""
    if metrics.get("variant"):
        return str(metrics["variant"])
    overrides = metrics.get("overrides") or []
    for text in overrides:
        key, _, value = str(text).lstrip("+").partition("=")
        if key == "variant" and value:
            return value
    return ",".join(sorted(meaningful_overrides(overrides))) or "default"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    return data if isinstance(data, dict) else None


def _stand_in(run_dir: Path, problem: str) -> dict[str, Any]:
    """What a run without a readable metrics.json still tells: its id from the start marker and
    its overrides from Hydra's `.hydra/overrides.yaml`."""
    run_id = (_read_json(run_dir / STARTED_FILE) or {}).get("run_id")
    match = _RUN_ID.match(run_id or "")
    try:
        overrides = yaml.safe_load((run_dir / ".hydra" / "overrides.yaml").read_text())
    except (OSError, yaml.YAMLError):
        overrides = None
    return {
        "status": "failed",
        "error": problem,
        "run_id": run_id,
        "config_hash": match["hash"] if match else None,
        "seed": int(match["seed"]) if match else None,
        "overrides": overrides if isinstance(overrides, list) else [],
    }


def _read_run(run_dir: Path) -> dict[str, Any]:
    path = run_dir / METRICS_FILE
    if in_use(run_dir):
        earlier = _read_json(path) if path.exists() else None
        if (earlier or {}).get("status") != "completed":
            warnings.warn(
                f"{run_dir}: still running (a live process holds its run dir); shown as "
                f"{RUNNING}, left out of the means",
                RunsWarning,
                stacklevel=3,
            )
            return {**(earlier or _stand_in(run_dir, "")), "status": RUNNING, "error": None}
    if not path.exists():
        problem = "no metrics.json (the run was killed before it recorded how it ended)"
        metrics = None
    else:
        metrics = _read_json(path)
        problem = "metrics.json is not a readable JSON object"
    if metrics is None:
        warnings.warn(f"{path}: {problem}; counted as a failed run", RunsWarning, stacklevel=3)
        return _stand_in(run_dir, problem)
    if metrics.get("status") not in STATUSES:
        warnings.warn(
            f"{path}: status {metrics.get('status')!r} is not one of {', '.join(STATUSES)}; "
            "counted as a failed run",
            RunsWarning,
            stacklevel=3,
        )
        metrics = {**metrics, "status": "failed"}
    return metrics


def _row(run_dir: Path, metrics: dict[str, Any]) -> dict[str, Any]:
    wandb = dict(metrics["wandb"]) if isinstance(metrics.get("wandb"), dict) else {}
    config = metrics["config"] if isinstance(metrics.get("config"), dict) else {}
    wandb["group"] = wandb.get("group") or config.get("group")  # set even when W&B was off
    git = metrics["git"] if isinstance(metrics.get("git"), dict) else {}
    row: dict[str, Any] = {
        "run_dir": str(run_dir.resolve()),
        "variant": variant_of(metrics),
        "status": metrics["status"],
        "seed": metrics.get("seed"),
        "run_id": metrics.get("run_id"),
        "config_hash": metrics.get("config_hash"),
        "monitor": metrics.get("monitor"),
        "mode": metrics.get("mode"),
        "error": metrics.get("error"),
        "wall_time_s": finite(metrics.get("wall_time_s")),
        **{f"wandb.{key}": wandb.get(key) for key in _WANDB_FIELDS},
        **{f"git.{key}": git.get(key) for key in _GIT_FIELDS},
    }
    for part in ("final", "best"):
        values = metrics.get(part) if isinstance(metrics.get(part), dict) else {}
        for name, value in values.items():
            number = finite(value)
            if number is not None:
                row[f"{part}.{name}"] = number
    return row


def _written_at(run_dir: Path) -> float:
    for name in (METRICS_FILE, STARTED_FILE):
        if (run_dir / name).exists():
            return (run_dir / name).stat().st_mtime
    return run_dir.stat().st_mtime


def _newest_attempts(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, run id): a run re-run after a crash (an ablation re-run, a resume
    in a new folder) counts once, as its newest completed attempt, else its newest attempt."""
    order = pd.DataFrame(
        {
            "done": runs["status"] == "completed",
            "time": [_written_at(Path(d)) for d in runs["run_dir"]],
        }
    ).sort_values(["done", "time"])
    ranked = runs.loc[order.index]
    keyed = ranked["run_id"].notna()
    kept = ranked[keyed].drop_duplicates(["variant", "run_id"], keep="last")
    newest = {(r["variant"], r["run_id"]): r["run_dir"] for _, r in kept.iterrows()}
    for _, old in ranked[keyed].drop(kept.index).iterrows():
        warnings.warn(
            f"{old['run_dir']}: an earlier attempt of run {old['run_id']}, superseded by "
            f"{newest[old['variant'], old['run_id']]}; left out",
            RunsWarning,
            stacklevel=3,
        )
    return pd.concat([kept, ranked[~keyed]])


def load_runs(
    source: Path, where: list[str] | None = None, names: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """One row per run under `source`: identity columns, `final.<metric>` and `best.<metric>`.

    `where` (["trainer.max_epochs=10", ...]) keeps the runs whose config has those values;
    `names` (config hash -> variant) relabels runs by what their config is today, since
    research-ablate reuses a finished run under whichever variant now has its config; a
    variant holding runs of different configs is split per config, with a RunsWarning."""
    source = Path(source)
    if not source.is_dir():
        raise ReportError(f"{source} is not a folder; pass a folder of run dirs")
    dirs = find_run_dirs(source)
    if not dirs:
        raise ReportError(
            f"no runs under {source}: a run dir holds {METRICS_FILE} (searched at any depth)"
        )
    records = consistency.where([(d, checked(d, _read_run(d))) for d in dirs], where or [])
    runs = _newest_attempts(pd.DataFrame([_row(d, m) for d, m in records]))
    if names:
        runs["variant"] = [
            names.get(h, v) for h, v in zip(runs["config_hash"], runs["variant"], strict=True)
        ]
    configs = {str(d.resolve()): m.get("config") for d, m in records}
    runs, notes = consistency.split_inconsistent(runs, configs)
    for note in notes:
        warnings.warn(note, RunsWarning, stacklevel=2)
    runs["seed"] = pd.array(runs["seed"], dtype="Int64")
    return runs.sort_values(["variant", "seed", "run_dir"]).reset_index(drop=True)


def relative_run_dirs(runs: pd.DataFrame, source: Path) -> pd.DataFrame:
    """`runs` with each run dir written relative to `source` (posix): a report's files name the
    runs by where they sit in the folder it describes, never by one machine's paths."""
    source = Path(source).resolve()

    def shown(text: str) -> str:
        path = Path(text)
        return path.relative_to(source).as_posix() if path.is_relative_to(source) else text

    return runs.assign(run_dir=[shown(str(d)) for d in runs["run_dir"]])


def run_configs(runs: pd.DataFrame) -> dict[str, dict[str, Any] | None]:
    """run dir -> the resolved config its metrics.json recorded (None where it has none)."""
    configs = {}
    for run_dir in runs["run_dir"]:
        config = (_read_json(Path(run_dir) / METRICS_FILE) or {}).get("config")
        configs[run_dir] = config if isinstance(config, dict) else None
    return configs


def load_histories(
    runs: pd.DataFrame, statuses: tuple[str, ...] = ("completed",), name: str = HISTORY_FILE
) -> pd.DataFrame:
    """The rows of each run's `name` (history.jsonl: one per epoch) of the runs with one of
    `statuses`, long format, with the run's `run_dir`, `variant` and `seed`."""
    rows = []
    chosen = runs[runs["status"].isin(statuses)]
    for run in chosen[["run_dir", "variant", "seed"]].to_dict("records"):
        rows += [{**run, **point} for point in read_history(Path(run["run_dir"]), name)]
    return pd.DataFrame(rows, columns=None if rows else ["run_dir", "variant", "seed", "epoch"])
