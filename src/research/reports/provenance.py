"""provenance.json: where every cell of a report's tables comes from.

For each variant x metric: the runs averaged into it (run id, seed, run dir relative to the
report's source, git commit and whether the checkout was dirty), the config keys in which the
variant differs from the baseline, and the comparison with the baseline. A reader of a paper's
table can go from a number to the runs and code that made it; the report's options are kept too,
so a report re-rendered from its runs.csv is made the same way.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from research.reports.tables import better_variants
from research.tracking.identity import flatten, identity_content

if TYPE_CHECKING:
    from research.reports.report import Report

_ABSENT = None  # a key one side's config does not have


def _plain(value: Any) -> Any:
    """A JSON value: NaN and pandas' <NA> as null, numpy scalars as Python ones."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def shared_config(configs: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The dotted keys (minus bookkeeping and the seed) on which all of a variant's runs agree;
    None when a run's config is unknown."""
    if not configs or any(c is None for c in configs):
        return None
    flat = [flatten(identity_content(c)) for c in configs]  # type: ignore[arg-type]
    first = flat[0]
    return {k: v for k, v in first.items() if all(k in f and f[k] == v for f in flat[1:])}


def config_diff(
    baseline: dict[str, Any] | None, variant: dict[str, Any] | None
) -> dict[str, dict[str, Any]] | None:
    """key -> {"baseline": value, "variant": value} for each dotted key whose value differs;
    None when either side's config is unknown."""
    if baseline is None or variant is None:
        return None
    keys = sorted(set(baseline) | set(variant))
    return {
        k: {"baseline": baseline.get(k, _ABSENT), "variant": variant.get(k, _ABSENT)}
        for k in keys
        if baseline.get(k, _ABSENT) != variant.get(k, _ABSENT)
    }


def _runs_of(runs: pd.DataFrame, variant: str, metric: str) -> pd.DataFrame:
    done = runs[(runs["variant"] == variant) & (runs["status"] == "completed")]
    return done[done[metric].notna()]


def _run_entry(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": _plain(row.get("run_id")),
        "seed": _plain(row.get("seed")),
        "run_dir": row["run_dir"],
        "git_commit": _plain(row.get("git.commit")),
        "git_dirty": _plain(row.get("git.dirty")),
    }


def provenance(
    report: Report, shown: pd.DataFrame, configs: dict[str, dict[str, Any] | None]
) -> dict[str, Any]:
    """The provenance of `report`'s cells; `shown` is its runs with run dirs as written
    (relative), row for row; `configs` maps a run dir of `report.runs` to its config."""
    runs = report.runs.assign(shown=shown["run_dir"].to_numpy())
    shared = {
        v: shared_config([configs.get(d) for d in runs.loc[runs["variant"] == v, "run_dir"]])
        for v in report.table.index
    }
    cells = []
    for metric in report.metrics:
        found = {c.variant: c for c in report.comparisons.get(metric, [])}
        bold = better_variants(report.comparisons.get(metric, []))
        for variant, row in report.table.iterrows():
            used = _runs_of(runs, str(variant), metric)
            entries = [_run_entry({**r, "run_dir": r["shown"]}) for r in used.to_dict("records")]
            c = found.get(str(variant))
            cells.append(
                {
                    "variant": str(variant),
                    "metric": metric,
                    "n": int(row[f"{metric} n"]),
                    "mean": _plain(row[f"{metric} mean"]),
                    "low": _plain(row[f"{metric} ci_low"]),
                    "high": _plain(row[f"{metric} ci_high"]),
                    "bold": variant in bold,
                    "against_baseline": None
                    if c is None
                    else {
                        "diff": _plain(c.diff),
                        "low": _plain(c.low),
                        "high": _plain(c.high),
                        "n": c.n,
                        "paired": c.paired,
                        "p_holm": _plain(c.p_holm),
                        "verdict": c.verdict,
                        "note": c.note,
                    },
                    "runs": entries,
                    "git_commits": sorted({e["git_commit"] for e in entries if e["git_commit"]}),
                    "config_diff": None
                    if report.baseline is None
                    else config_diff(shared.get(report.baseline), shared.get(str(variant))),
                }
            )
    return {
        "source": report.origin,
        "ablation": report.ablation_name,
        "read_from": "runs.csv" if report.recorded else "run dirs",
        "missing": report.missing,
        "baseline": report.baseline,
        "options": report.options,
        "cells": cells,
    }
