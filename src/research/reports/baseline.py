"""The baseline comparison of a report: which variant is the baseline, every other variant's
difference to it with its interval, n and Holm-adjusted p-value, and a sentence per metric saying
what is beyond noise, what is not, and what the seeds cannot tell."""

from __future__ import annotations

import math

import pandas as pd

from research.reports.errors import ReportError
from research.reports.stats import ALPHA, CONFIDENCE, MIN_CLAIM, Comparison, compare
from research.reports.tables import decimals, signed


def choose_baseline(variants: list[str], asked: str | None, configured: str | None) -> str | None:
    """`asked` (--baseline), else the ablation file's `baseline`, else "default", else the first
    variant; None with fewer than two variants (nothing to compare)."""
    for name, origin in ((asked, "--baseline"), (configured, "the ablation's `baseline`")):
        if name is not None:
            if name not in variants:
                raise ReportError(
                    f"{origin} {name!r} is not a variant of these runs; variants: "
                    f"{', '.join(variants)}"
                )
            return name
    if len(variants) < 2:
        return None
    return "default" if "default" in variants else variants[0]


def comparisons(
    runs: pd.DataFrame,
    metrics: list[str],
    directions: dict[str, str | None],
    baseline: str,
    variants: list[str],
) -> dict[str, list[Comparison]]:
    """metric -> every other variant against the baseline (Holm across variants per metric)."""
    return {m: compare(runs, m, baseline, directions[m], variants) for m in metrics}


def _cell(c: Comparison) -> str:
    """`+0.0104 [+0.0090, +0.0118] (n=5) p=0.00031`; p is `–` where no test is made."""
    if math.isnan(c.diff):
        return "–"
    n = f"(n={c.n})" if c.paired else f"(n≥{c.n})"
    p = "p=–" if math.isnan(c.p_holm) else f"p={c.p_holm:.2g}"
    if math.isnan(c.low):
        return f"{signed(c.diff, 4)} {n} {p}"
    places = decimals(c.diff, (c.high - c.low) / 2)
    interval = f"[{signed(c.low, places)}, {signed(c.high, places)}]"
    text = f"{signed(c.diff, places)} {interval} {n} {p}"
    return f"**{text}**" if c.verdict == "better" else text


def verdict_lines(found: dict[str, list[Comparison]], baseline: str) -> list[str]:
    """One sentence per metric: what is better or worse than the baseline beyond noise, and
    what cannot be told (and why)."""
    lines = []
    for metric, items in found.items():
        if not items or items[0].verdict == "unknown":
            continue
        by = {v: [c.variant for c in items if c.verdict == v] for v in ("better", "worse")}
        noise = [c.variant for c in items if c.verdict == "noise"]
        untold = [f"{c.variant} ({c.note})" for c in items if c.verdict == "undecided"]
        parts = [f"{k} than `{baseline}`: {', '.join(v)}" for k, v in by.items() if v]
        if noise and untold:
            parts.append(f"within noise of `{baseline}`: {', '.join(noise)}")
        elif noise:
            every = f"every variant is within noise of the baseline `{baseline}`"
            parts.append("the rest are within noise" if parts else every)
        if untold:
            parts.append("cannot tell: " + ", ".join(untold))
        lines.append(f"- {metric}: " + "; ".join(parts) + ".")
    return lines


def comparison_markdown(found: dict[str, list[Comparison]], baseline: str) -> str:
    """The difference table (variant minus baseline) with its legend and verdict lines."""
    metrics = list(found)
    variants = list(dict.fromkeys(c.variant for items in found.values() for c in items))
    if not variants:
        return ""
    header = ["variant", "pairing", *(f"Δ {m}" for m in metrics)]
    lines = [
        f"## Against the baseline `{baseline}`",
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|" + "---:|" * len(metrics),
    ]
    for variant in variants:
        cells = {c.metric: c for items in found.values() for c in items if c.variant == variant}
        pairing = "by seed" if cells[metrics[0]].paired else "unpaired (Welch)"
        lines.append(
            "| "
            + " | ".join(
                [variant.replace("|", "\\|"), pairing, *(_cell(cells[m]) for m in metrics)]
            )
            + " |"
        )
    lines += [
        "",
        f"Δ = variant mean − baseline mean [{CONFIDENCE:.0%} Student-t interval] (n = seeds "
        "paired, or the smaller variant's runs when unpaired); p = two-sided t-test (paired by "
        "seed where both have the same seeds, else Welch's), Holm-adjusted across the variants "
        f"of each metric; p=– = no test (fewer than {MIN_CLAIM} seeds, or no spread). **Bold** = "
        f"better than the baseline beyond noise: the interval excludes 0 and p < {ALPHA}.",
        "",
        *verdict_lines(found, baseline),
        "",
    ]
    return "\n".join(lines)
