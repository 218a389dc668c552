"""`research-ablate --until-decided`: when each variant has enough seeds, and what was decided.

Each variant is compared with the ablation's baseline on the paired (by seed) difference of one
metric. After each batch of seeds the anytime-valid confidence sequence of that difference
(research.ablation.sequential) decides it: better or worse when it excludes 0, equivalent when it
lies within ±margin; otherwise the variant gets the next batch of seeds, until the seed budget.
The CS is valid at every number of seeds, so looking after each batch and stopping there keeps
its error rate. Each variant's CS is at level α/k (Bonferroni over the k variants), so the
chance that any decision is wrong stays ≤ α.

Seeds are the ablation file's, then the next integers after its largest one. The decisions go to
`decisions.json` in the ablation's folder, read by research-report (reports/decisions.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from research.ablation.sequential import PRIOR_PRECISION, confidence_sequence
from research.config.errors import ConfigError
from research.config.schema import MAX_SEED
from research.tracking.run_dir import METRICS_FILE, read_metrics
from research.utils.atomic import write_json_atomic

DECISIONS_FILE = "decisions.json"
METHOD = (
    "anytime-valid t confidence sequence (Lai 1976; Wang & Ramdas 2023, Gaussian mixture over "
    f"the standardized effect, precision c={PRIOR_PRECISION}); assumes normal seed noise"
)


@dataclass(frozen=True)
class Rule:
    """What decides a variant: the metric and its direction, the family-wise α over `variants`
    comparisons, the equivalence margin (None: no equivalence decision), the seed budget."""

    metric: str  # "final.test/acc" or "best.val/acc"
    direction: str  # "max" or "min"
    alpha: float
    variants: int
    margin: float | None
    max_seeds: int

    @property
    def level(self) -> float:
        """Each variant's CS level: α/k (Bonferroni over the variants)."""
        return self.alpha / self.variants


@dataclass
class Verdict:
    """Where one variant stands: its decision, why, the seeds paired with the baseline, the
    mean paired difference (variant − baseline) and its CS (None where unbounded)."""

    variant: str
    decision: str  # better | worse | equivalent | undecided
    reason: str
    seeds: list[int] = field(default_factory=list)
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    final: bool = False  # no more seeds: decided, or the budget is reached


def seed_sequence(seeds: list[int], max_seeds: int) -> list[int]:
    """The file's seeds, then the next integers after its largest, `max_seeds` in all."""
    if max_seeds < max(len(seeds), 2):
        raise ConfigError(
            f"--max-seeds {max_seeds} is fewer than the ablation's {len(seeds)} seeds (or 2); "
            f"give at least {max(len(seeds), 2)}"
        )
    extra = [max(seeds) + i for i in range(1, max_seeds - len(seeds) + 1)]
    if extra and extra[-1] > MAX_SEED:
        raise ConfigError(f"the seeds would pass {MAX_SEED}; lower --max-seeds or the seeds")
    return [*seeds, *extra]


def judge(variant: str, seeds: list[int], diffs: list[float], rule: Rule) -> Verdict:
    """The verdict on `diffs` (variant − baseline on `seeds`), before the budget is applied."""
    if len(diffs) < 2:
        return Verdict(variant, "undecided", "fewer than 2 paired seeds", seeds)
    x = np.asarray(diffs, dtype=float)
    mean = float(x.mean())
    if np.ptp(x) == 0:  # the normal model cannot hold: no spread to measure the noise by
        return Verdict(variant, "undecided", "the differences have no spread", seeds, mean)
    lows, highs = confidence_sequence(x, rule.level)
    low, high = float(lows[-1]), float(highs[-1])
    bounds = (low if math.isfinite(low) else None, high if math.isfinite(high) else None)
    verdict = Verdict(variant, "undecided", "the interval holds 0", seeds, mean, *bounds)
    if low > 0 or high < 0:
        up = low > 0
        verdict.decision = "better" if up == (rule.direction == "max") else "worse"
        verdict.reason, verdict.final = "the interval excludes 0", True
    elif rule.margin is not None and -rule.margin < low and high < rule.margin:
        verdict.decision, verdict.final = "equivalent", True
        verdict.reason = f"the interval lies within ±{rule.margin:g}"
    return verdict


def next_counts(
    counts: dict[str, int], verdicts: dict[str, Verdict], rule: Rule, batch: int
) -> dict[str, int]:
    """How many seeds each variant needs next: an undecided one gets `batch` more, up to the
    budget; one at the budget is marked final (undecided at budget); decided ones keep theirs."""
    grown = dict(counts)
    for variant, verdict in verdicts.items():
        if verdict.final:
            continue
        if counts[variant] >= rule.max_seeds:
            verdict.final = True
            verdict.reason += f"; seed budget of {rule.max_seeds} reached"
        else:
            grown[variant] = min(counts[variant] + batch, rule.max_seeds)
    return grown


def choose_metric(asked: str | None, config: dict[str, Any]) -> tuple[str, str]:
    """The metric a variant is decided on and its direction: `asked` (`test/acc`, `best.val/acc`,
    `test/f1=max`), else the monitored metric's test value; the direction from an explicit
    `=max|min`, else the checkpoint mode when the metric measures the monitored quantity."""
    checkpoint = (config.get("callbacks") or {}).get("model_checkpoint") or {}
    monitor, mode = checkpoint.get("monitor"), checkpoint.get("mode")
    text, way = (asked or ""), None
    if text.rpartition("=")[2] in ("max", "min") and "=" in text:
        text, _, way = text.rpartition("=")
    if not text:
        if not monitor:
            raise ConfigError(
                "no monitored metric to decide on (callbacks.model_checkpoint.monitor); give "
                "--metric, e.g. --metric test/acc=max"
            )
        split, _, leaf = str(monitor).partition("/")
        text = f"test/{leaf}" if split == "val" and leaf else str(monitor)
    metric = text if text.startswith(("final.", "best.")) else f"final.{text}"
    quantity = metric.partition(".")[2].partition("/")[2]
    if way is None and monitor and quantity == str(monitor).partition("/")[2]:
        way = mode
    if way not in ("max", "min"):
        raise ConfigError(
            f"which way {metric} is better is not known (the runs monitor {monitor}); give "
            f"--metric {text}=max or --metric {text}=min"
        )
    return metric, way


def metric_value(metrics: dict[str, Any], metric: str) -> float | None:
    """`final.test/acc` (or `best.val/acc`) from a run's metrics.json; None if absent."""
    part, _, name = metric.partition(".")
    value = (metrics.get(part) or {}).get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def completed_values(folder: Path, metric: str) -> dict[str, float]:
    """Run id -> `metric` of the runs completed under `folder` (the newest attempt of each)."""
    found: dict[str, tuple[float, float]] = {}
    for path in folder.rglob(METRICS_FILE):
        metrics = read_metrics(path.parent) or {}
        value = metric_value(metrics, metric)
        run_id = metrics.get("run_id")
        if metrics.get("status") != "completed" or value is None or not run_id:
            continue
        written = path.stat().st_mtime
        if run_id not in found or written > found[run_id][0]:
            found[run_id] = (written, value)
    return {run_id: value for run_id, (_, value) in found.items()}


def write_decisions(
    folder: Path, name: str, baseline: str, rule: Rule, batch: int, verdicts: list[Verdict]
) -> Path:
    """`<folder>/decisions.json`: the rule and every variant's verdict (no machine paths)."""
    payload = {
        "ablation": name,
        "baseline": baseline,
        "metric": rule.metric,
        "direction": rule.direction,
        "alpha": rule.alpha,
        "alpha_per_variant": rule.level,
        "margin": rule.margin,
        "max_seeds": rule.max_seeds,
        "batch": batch,
        "method": METHOD,
        "variants": [asdict(v) for v in verdicts],
    }
    path = folder / DECISIONS_FILE
    write_json_atomic(path, payload)  # a killed round leaves the previous decisions whole
    return path
