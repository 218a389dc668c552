"""Which runs a report pools: `--where key=value` filters, and a variant whose runs differ in
config (apart from the seed) is split, with a warning naming the keys that differ.

Without the split a cut-down re-run (`trainer.max_epochs=1`) under the same variant name would be
averaged with the full runs into one mean.
"""

from __future__ import annotations

import difflib
from typing import Any

import pandas as pd
import yaml

from research.reports.errors import ReportError
from research.tracking.identity import flatten, identity_content

_SHOWN_KEYS = 3


def _config(metrics: dict[str, Any]) -> dict[str, Any]:
    config = metrics.get("config")
    return config if isinstance(config, dict) else {}


def parse_where(clauses: list[str]) -> list[tuple[str, str]]:
    parsed = []
    for clause in clauses:
        key, sep, value = clause.partition("=")
        if not sep or not key:
            raise ReportError(f"--where {clause!r} is not KEY=VALUE (e.g. trainer.max_epochs=10)")
        parsed.append((key.strip(), value.strip()))
    return parsed


def _equal(value: Any, text: str) -> bool:
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        parsed = text
    return value == parsed or str(value) == text


def where(
    records: list[tuple[Any, dict[str, Any]]], clauses: list[str]
) -> list[tuple[Any, dict[str, Any]]]:
    """The (run dir, metrics.json) pairs whose config (or metrics.json field: seed, variant,
    status, ...) has every `key=value` of `clauses`; unknown keys and empty results are errors."""
    kept = records
    for key, text in parse_where(clauses):
        fields = [{**metrics, **flatten(_config(metrics))} for _, metrics in kept]
        if not any(key in f for f in fields):
            known = sorted({k for f in fields for k in f if not isinstance(f[k], dict)})
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ReportError(f"--where {key}: no run has this config key{hint}")
        kept = [r for r, f in zip(kept, fields, strict=True) if key in f and _equal(f[key], text)]
        if not kept:
            values = sorted({str(f[key]) for f in fields if key in f})
            raise ReportError(
                f"--where {key}={text} matches no run; its values: {', '.join(values)}"
            )
    return kept


def _differing(configs: list[dict[str, Any]]) -> list[str]:
    flats = [flatten(identity_content(c)) for c in configs]
    keys = sorted({k for f in flats for k in f})
    return [k for k in keys if len({repr(f.get(k)) for f in flats}) > 1]


def _label(variant: str, config: dict[str, Any], keys: list[str], config_hash: str) -> str:
    if not keys:
        return f"{variant} [config {config_hash}]"
    flat = flatten(identity_content(config))
    shown = [f"{k}={flat.get(k)}" for k in keys[:_SHOWN_KEYS]]
    more = ", …" if len(keys) > _SHOWN_KEYS else ""
    return f"{variant} [{', '.join(shown)}{more}]"


def split_inconsistent(
    runs: pd.DataFrame, configs: dict[str, dict[str, Any]]
) -> tuple[pd.DataFrame, list[str]]:
    """Rename the runs of a variant that holds more than one config hash to
    `<variant> [key=value, ...]` per config; returns the runs and one warning per split variant.
    Runs whose config could not be read keep their variant unless their hash names a group."""
    runs = runs.copy()
    notes = []
    for variant, group in runs.groupby("variant", sort=False):
        readable = group[group["run_dir"].map(lambda d: bool(configs.get(d)))]
        hashes = list(dict.fromkeys(readable["config_hash"].dropna()))
        if len(hashes) < 2:
            continue
        example = {
            h: configs[readable[readable["config_hash"] == h]["run_dir"].iloc[0]] for h in hashes
        }
        keys = _differing(list(example.values()))
        labels = {h: _label(str(variant), example[h], keys, h) for h in hashes}
        rows = group.index[group["config_hash"].isin(hashes)]
        runs.loc[rows, "variant"] = runs.loc[rows, "config_hash"].map(labels)
        named = ", ".join(keys[:10]) or "none recorded (the config hashes differ)"
        notes.append(
            f"variant {variant!r} holds runs of {len(hashes)} different configs (differing "
            f"keys: {named}); split into {', '.join(labels.values())}. Filter with --where "
            "KEY=VALUE to keep one."
        )
    return runs, notes
