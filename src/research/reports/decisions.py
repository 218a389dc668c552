"""The report's "Seeds until decided" section: what `research-ablate --until-decided` decided for
each variant (better / worse / equivalent / undecided), on how many seeds, with its interval,
read from the ablation folder's decisions.json (research.ablation.decide writes it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research.ablation.decide import DECISIONS_FILE
from research.reports.tables import signed


def _seeds(seeds: list[int]) -> str:
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}–{seeds[-1]}"
    return ",".join(map(str, seeds))


def _interval(item: dict[str, Any]) -> str:
    if item.get("mean") is None:
        return "–"
    low, high = item.get("low"), item.get("high")
    shown = [("−∞" if low is None else signed(low, 4)), ("+∞" if high is None else signed(high, 4))]
    return f"{signed(item['mean'], 4)} [{shown[0]}, {shown[1]}]"


def _decision(item: dict[str, Any]) -> str:
    decision = str(item.get("decision"))
    if decision in ("better", "worse"):
        return f"**{decision}**"
    if decision == "undecided" and not item.get("final"):
        return "undecided (not finished: re-run the command to go on)"
    return decision


def decisions_markdown(source: Path) -> str:
    """The section for the ablation folder `source`; "" when it holds no decisions.json (or one
    this version cannot read)."""
    try:
        data = json.loads((Path(source) / DECISIONS_FILE).read_text())
        items = list(data["variants"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    better = "higher" if data.get("direction") == "max" else "lower"
    level = float(data.get("alpha_per_variant") or 0)
    margin = data.get("margin")
    lines = [
        "",
        f"## Seeds until decided (`{data.get('metric')}`, {better} is better, against "
        f"`{data.get('baseline')}`)",
        "",
        f"| variant | decision | seeds (n) | Δ [{1 - level:.1%} confidence sequence] | why |",
        "|---|---|---|---|---|",
    ]
    for item in items:
        seeds = [int(s) for s in item.get("seeds") or []]
        cells = [
            str(item.get("variant")),
            _decision(item),
            f"{_seeds(seeds)} ({len(seeds)})",
            _interval(item),
            str(item.get("reason", "")),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += [
        "",
        "Δ = variant − baseline, paired by seed, from `research-ablate --until-decided` "
        f"(seeds added {data.get('batch')} at a time, at most {data.get('max_seeds')}). The "
        "interval is an anytime-valid confidence sequence (Lai 1976; Wang & Ramdas 2023): it "
        "holds at every number of seeds at once, so stopping when it decides keeps its error "
        f"rate. Each is at level {level:.3g} = α/k (α = {data.get('alpha')} over the k "
        "variants, Bonferroni), so all decisions hold together with probability ≥ "
        f"{1 - float(data.get('alpha') or 0):.0%}. It assumes the seed-to-seed noise of the "
        "difference is normal. Better/worse: the interval excludes 0"
        + (f"; equivalent: it lies within ±{margin:g}" if margin else "")
        + ". Undecided at the budget says the seeds could not tell, not that there is no "
        "effect.",
        "",
    ]
    return "\n".join(lines)
