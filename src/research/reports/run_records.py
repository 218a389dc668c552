"""One small JSON file per run, committed beside a study so its README's numbers can be
re-derived on any machine after the run dirs are gone.

A run dir holds checkpoints, W&B files and a resolved config with machine paths; a study needs
only what its tables read: the run's identity, its final and best metrics, its epoch history,
and optionally a few step-level traces (say the first and last layer's gradient norm) and a
retrieval run's per-query scores (for paired tests over queries, `research.reports.per_query`).
A record is written as `<variant>_s<seed>.json`, with no absolute paths, and is read back as a
runs table with the same columns as `load_runs` gives, so the report's statistics apply to it
unchanged.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from research.reports.errors import ReportError
from research.reports.runs import load_runs
from research.retrieval.metrics import read_per_query
from research.tracking.run_dir import GRAD_NORM_FILE, read_history, read_metrics
from research.utils.atomic import write_json_atomic

_IDENTITY = ("variant", "seed", "run_id", "config_hash", "status", "monitor", "mode")
_DROPPED = {"checkpoint"}  # a path inside the run dir, meaningless once it is gone


def _clean(value: Any) -> Any:
    """JSON without NaN: a metric that was not finite is recorded as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in _DROPPED}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _traces(run_dir: Path, patterns: Iterable[str]) -> dict[str, list[list[float]]]:
    """Per step-level key matching one of `patterns`: its [step, value] pairs."""
    patterns = list(patterns)
    traces: dict[str, list[list[float]]] = {}
    for row in read_history(run_dir, GRAD_NORM_FILE) if patterns else []:
        for key, value in row.items():
            if key not in ("step", "epoch") and any(fnmatch.fnmatch(key, p) for p in patterns):
                traces.setdefault(key, []).append([row["step"], value])
    return traces


def run_record(
    run_dir: Path,
    identity: dict[str, Any],
    patterns: Iterable[str] = (),
    per_query_splits: Iterable[str] = (),
) -> dict:
    """The record of one run dir; `identity` is its row in `load_runs` (which also names the
    runs that left no readable metrics.json: they are recorded as failed, never dropped).
    `per_query_splits` names the splits whose per-query scores the record keeps, under
    `per_query` ({split: {metric: {query id: score}}}; a split the run did not score is absent)."""
    metrics = read_metrics(run_dir) or {}
    record = {key: identity.get(key) for key in _IDENTITY}
    record["seed"] = None if pd.isna(record["seed"]) else int(record["seed"])
    record["overrides"] = metrics.get("overrides") or []
    record["commit"] = (metrics.get("git") or {}).get("commit")
    for key in ("wall_time_s", "started_at", "finished_at"):
        record[key] = metrics.get(key)
    record["final"] = metrics.get("final") or {}
    record["best"] = metrics.get("best") or {}
    record["history"] = read_history(run_dir)
    record["traces"] = _traces(run_dir, patterns)
    splits = tuple(per_query_splits)
    if splits:
        scored = {split: read_per_query(run_dir, split) for split in splits}
        record["per_query"] = {split: found for split, found in scored.items() if found}
    return _clean(record)


def _file_name(record: dict[str, Any], run_dir: Path) -> str:
    seed = f"s{record['seed']}" if record["seed"] is not None else run_dir.name
    return f"{record['variant']}_{seed}.json"


def write_records(
    source: Path,
    out: Path,
    trace_patterns: Iterable[str] = (),
    per_query_splits: Iterable[str] = (),
) -> list[Path]:
    """A record per run under `source` (the newest attempt of each, as a report counts it) in
    `out`, replacing the records there: the folder mirrors the runs, never a mix of two."""
    runs = load_runs(source)
    per_query_splits = tuple(per_query_splits)  # read once per run, not consumed by the first
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for _, row in runs.iterrows():
        run_dir = Path(row["run_dir"])
        record = run_record(run_dir, row.to_dict(), trace_patterns, per_query_splits)
        path = out / _file_name(record, run_dir)
        if path in written:
            raise ReportError(
                f"{source}: two runs of {record['variant']} with seed {record['seed']}"
            )
        write_json_atomic(path, record)
        written.append(path)
    for old in set(out.glob("*.json")) - set(written):
        old.unlink()
    return sorted(written)


def read_records(folder: Path) -> list[dict[str, Any]]:
    """Every record in `folder`, by variant then seed (records without a seed last)."""
    paths = sorted(Path(folder).glob("*.json"))
    if not paths:
        raise ReportError(f"no run records (*.json) in {folder}")
    records = [json.loads(p.read_text()) for p in paths]
    return sorted(records, key=lambda r: (r["variant"], r["seed"] is None, r["seed"] or 0))


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The records as a runs table: identity columns, `final.<metric>`, `best.<metric>`."""
    rows = []
    for record in records:
        row = {key: record.get(key) for key in _IDENTITY}
        for part in ("final", "best"):
            for name, value in (record.get(part) or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    row[f"{part}.{name}"] = float(value)
                elif value is None:
                    row[f"{part}.{name}"] = math.nan
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame["seed"] = pd.array(frame["seed"], dtype="Int64")
    return frame
