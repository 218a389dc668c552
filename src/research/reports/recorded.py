"""A report's runs.csv read back as the runs of a new report.

A committed study keeps its report folder, not the run dirs behind it (they lived on the machine
that ran them). runs.csv holds one row per run with every final and best metric, which is all the
tables, intervals and comparisons need; it holds neither configs nor histories, so a report made
from it has no redrawn curves and no config diff, and says so.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import pandas as pd

from research.reports.errors import ReportError

RUNS_FILE = "runs.csv"
PROVENANCE_FILE = "provenance.json"
# What a row needs to be counted; everything else (metrics, W&B, git) is used where present.
_REQUIRED = ("run_dir", "variant", "status", "seed")
# Read as text, never as numbers: a config hash or commit of digits only, a variant named `1`.
_TEXT = (
    "run_dir",
    "variant",
    "status",
    "run_id",
    "config_hash",
    "monitor",
    "mode",
    "error",
    "wandb.project",
    "wandb.group",
    "wandb.mode",
    "wandb.run_id",
    "git.commit",
)
# What a recorded runs.csv cannot give a report (said in its report.md and provenance.json).
MISSING = (
    "it was re-rendered from a recorded runs.csv: the run dirs were not read, so there are no "
    "redrawn learning curves (curves already in the folder are kept as they were drawn), no "
    "query-by-query comparison, no config diff against the baseline, and the runs' W&B and git "
    "fields are what runs.csv holds"
)
_BASELINE = re.compile(r"^## Against the baseline `([^`]+)`$", re.MULTILINE)


@dataclass(frozen=True)
class Recorded:
    """The runs of a runs.csv, and what the report that wrote it recorded about itself."""

    runs: pd.DataFrame
    origin: str  # the runs' folder as reports show it, e.g. "ablations/xiong2020"
    ablation: str | None  # the ablation the runs came from, when known
    options: dict[str, Any] = field(default_factory=dict)  # the earlier report's options


def _parts(text: str) -> tuple[str, ...]:
    path = PureWindowsPath(text) if "\\" in text else PurePosixPath(text)
    return tuple(path.parts)


def _absolute(text: str) -> bool:
    return PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute()


def _folder(run_dirs: list[str]) -> tuple[tuple[str, ...], str | None]:
    """The folder the absolute run dirs were read from, and its ablation: a run under
    `.../ablations/<name>/...` came from that ablation's folder; else the longest common folder
    of the runs' parent folders."""
    split = [_parts(d) for d in run_dirs]
    for parts in split:
        if "ablations" in parts[:-2]:
            at = len(parts) - 1 - parts[::-1].index("ablations")
            root = parts[: at + 2]
            if all(p[: len(root)] == root for p in split):
                return root, root[-1].split("+")[0]
    common: tuple[str, ...] = split[0][:-1]
    for parts in split[1:]:
        n = 0
        while n < min(len(common), len(parts) - 1) and common[n] == parts[n]:
            n += 1
        common = common[:n]
    return common, None


def _relative(run_dirs: list[str]) -> tuple[list[str], str | None, str | None]:
    """Run dirs relative to their folder, that folder as shown (its last two parts under an
    ablations/ folder, else its name) and its ablation; relative run dirs are kept as they are."""
    absolute = [d for d in run_dirs if _absolute(d)]
    if not absolute:
        return run_dirs, None, None
    root, ablation = _folder(absolute)
    shown = "/".join(root[-2:]) if ablation else (root[-1] if len(root) > 1 else None)
    out = []
    for text in run_dirs:
        parts = _parts(text)
        out.append("/".join(parts[len(root) :]) if _absolute(text) else text)
    return out, shown, ablation


def _earlier(folder: Path) -> dict[str, Any]:
    """What the report in `folder` recorded about itself: its provenance.json; for a report
    made before there was one, the metrics of its report.csv and the baseline its report.md
    names."""
    try:
        data = json.loads((folder / PROVENANCE_FILE).read_text())
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict):
        return data
    options: dict[str, Any] = {}
    try:
        header = next(csv.reader(io.StringIO((folder / "report.csv").read_text())))
        options["metrics"] = [c.removesuffix(" mean") for c in header if c.endswith(" mean")]
    except (OSError, StopIteration, csv.Error):
        pass
    try:
        found = _BASELINE.search((folder / "report.md").read_text())
    except OSError:
        found = None
    if found:
        options["baseline"] = found[1]
    return {"options": {k: v for k, v in options.items() if v}}


def load_recorded(path: Path) -> Recorded:
    """The runs of the runs.csv at `path` as `load_runs` gave them (run dirs made relative to
    the folder they were read from), with the source, ablation and options that the report
    beside it recorded (`_earlier`)."""
    try:
        runs = pd.read_csv(path, dtype=dict.fromkeys(_TEXT, str))
    except (OSError, ValueError) as err:
        raise ReportError(f"{path}: not a readable runs.csv ({err})") from None
    missing = [c for c in _REQUIRED if c not in runs.columns]
    if missing or runs.empty:
        raise ReportError(
            f"{path}: not a report's runs.csv (it needs the columns {', '.join(_REQUIRED)} and "
            f"at least one row; missing: {', '.join(missing) or 'rows'})"
        )
    earlier = _earlier(path.parent)
    dirs, shown, ablation = _relative([str(d) for d in runs["run_dir"]])
    runs["run_dir"] = dirs
    runs["seed"] = pd.array(pd.to_numeric(runs["seed"]), dtype="Int64")
    for column in ("error", "monitor", "mode"):
        if column in runs.columns:
            runs[column] = runs[column].astype(object).where(runs[column].notna(), None)
    runs = runs.sort_values(["variant", "seed", "run_dir"]).reset_index(drop=True)
    return Recorded(
        runs,
        shown or earlier.get("source") or path.parent.name,
        ablation or earlier.get("ablation"),
        earlier.get("options") or {},
    )
