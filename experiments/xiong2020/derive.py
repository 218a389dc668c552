"""Every table and verdict of experiments/xiong2020/README.md, re-derived from the files
committed beside it: `init_gradients.json`, `baselines.json` and the run records under `runs/`
(written by `collect.py`).

    python experiments/xiong2020/derive.py            # print the blocks
    python experiments/xiong2020/derive.py --check    # exit 1 if the README differs
    python experiments/xiong2020/derive.py --write    # rewrite the README's blocks

The README's tables sit between `<!-- derived: NAME -->` markers (research.reports.readme_blocks);
tests/experiments/test_study_tables.py runs `--check`'s comparison.
"""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
from collections.abc import Callable
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from research.ablation.decide import Rule, Verdict, judge
from research.reports.readme_blocks import derive_cli
from research.reports.run_records import read_records
from research.reports.stats import mean_interval
from research.reports.tables import format_mean_std, signed

HERE = Path(__file__).parent
README = HERE / "README.md"
STALL_MARGIN = 0.05  # a run is stalled when its accuracy is below the majority class's + this
TRACE_STEPS = (0, 10, 40, 110)
SWEEP_BASELINE = "warmup"  # the standard recipe whose best validation loss picks the rate


def _init_gradients() -> Any:
    """The sibling init_gradients.py (slopes and tables of the initialisation measurement)."""
    spec = importlib.util.spec_from_file_location("xiong_init", HERE / "init_gradients.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def records(ablation: str) -> tuple[dict[str, Any], ...]:
    return tuple(read_records(HERE / "runs" / ablation))


@cache
def decisions(ablation: str) -> dict[str, Any]:
    return json.loads((HERE / "runs" / f"{ablation}.decisions.json").read_text())


@cache
def baselines() -> dict[str, dict[str, float]]:
    return json.loads((HERE / "baselines.json").read_text())


def values(ablation: str, variant: str, metric: str) -> dict[int, float]:
    """Seed -> `final.<metric>` of the completed runs of one variant."""
    return {
        r["seed"]: r["final"][metric]
        for r in records(ablation)
        if r["variant"] == variant
        and r["status"] == "completed"
        and r["final"].get(metric) is not None
    }


def stalled(ablation: str, variant: str, split: str) -> int:
    """Runs of `variant` whose final accuracy on `split` is below the majority class's + margin
    (a run that did not complete counts as stalled)."""
    floor = baselines()[split]["majority_acc"] + STALL_MARGIN
    mine = [r for r in records(ablation) if r["variant"] == variant]
    return sum(1 for r in mine if not (r["final"].get(f"{split}/acc") or 0) >= floor)


def mean_std(xs: list[float]) -> str:
    std = statistics.stdev(xs) if len(xs) > 1 else math.nan
    return format_mean_std(statistics.fmean(xs), std)


def variants(ablation: str) -> list[str]:
    return list(dict.fromkeys(r["variant"] for r in records(ablation)))


# --- claim 1: gradients at initialisation --------------------------------------------------


@cache
def fitted_slopes() -> tuple[dict[str, Any], ...]:
    data = json.loads((HERE / "init_gradients.json").read_text())
    return tuple(_init_gradients().slopes(data))


def init_block() -> str:
    data = json.loads((HERE / "init_gradients.json").read_text())
    return _init_gradients().tables(data, list(fitted_slopes()))


def slope_claim(norm: str) -> tuple[str, str]:
    """(interval text, verdict) for the Xavier-init FFN-output slope of `norm`: Theorem 1 says
    about 0 for post-norm and -1/2 for pre-norm."""
    (row,) = (
        r
        for r in fitted_slopes()
        if (r["init"], r["norm"], r["param"]) == ("xavier", norm, "linear2.weight")
    )
    _, low, high, _ = mean_interval(row["slopes"])  # Student-t: valid at n = 3 under normal noise
    expected = 0.0 if norm == "post" else -0.5
    text = f"{row['mean']:+.3f}, 95% t-interval [{low:+.3f}, {high:+.3f}] (n={len(row['slopes'])})"
    if low <= expected <= high and not (norm == "pre" and high >= 0):
        return text, "reproduced"
    return text, "not reproduced"


# --- baselines and the learning-rate sweep --------------------------------------------------


def baselines_block() -> str:
    lines = [
        "| split | docstrings | majority class accuracy | class-prior cross-entropy "
        "| stalled below accuracy |",
        "|---|---:|---:|---:|---:|",
    ]
    for split, b in baselines().items():
        lines.append(
            f"| {split} | {b['size']} | {b['majority_acc']:.3f} | {b['prior_ce']:.3f} | "
            f"{b['majority_acc'] + STALL_MARGIN:.3f} |"
        )
    return "\n".join(lines)


def sweep_rates() -> dict[str, list[str]]:
    """Rate label (lr2e-3) -> its variants in the sweep, in the sweep's order."""
    rates: dict[str, list[str]] = {}
    for variant in variants("xiong2020_lr"):
        rates.setdefault(variant.split("+")[0], []).append(variant)
    return rates


def chosen_rate() -> float:
    """The rule, fixed before the norm x warmup runs: the rate at which the standard recipe
    (post-norm with warmup) reaches its lowest mean final validation loss over the seeds."""
    means = {
        rate: statistics.fmean(
            values("xiong2020_lr", f"{rate}+{SWEEP_BASELINE}", "val/loss").values()
        )
        for rate in sweep_rates()
    }
    return float(min(means, key=means.__getitem__).removeprefix("lr"))


def sweep_block() -> str:
    lines = [
        "| lr | warmup | final val loss per seed | mean | final val acc, mean | stalled (val) |",
        "|---|---|---|---:|---:|---:|",
    ]
    for rate, names in sweep_rates().items():
        for variant in names:
            loss = values("xiong2020_lr", variant, "val/loss")
            acc = values("xiong2020_lr", variant, "val/acc")
            per_seed = ", ".join(f"s{s}: {v:.3f}" for s, v in sorted(loss.items()))
            lines.append(
                f"| {float(rate.removeprefix('lr')):g} | {variant.split('+')[1]} | {per_seed} | "
                f"{statistics.fmean(loss.values()):.3f} | {statistics.fmean(acc.values()):.3f} | "
                f"{stalled('xiong2020_lr', variant, 'val')} of {len(loss)} |"
            )
    lines += ["", f"Chosen by the rule: **lr {chosen_rate():g}**."]
    return "\n".join(lines)


# --- norm x warmup, decided until decided --------------------------------------------------


def results_block(ablation: str) -> str:
    test = baselines()["test"]
    lines = [
        f"| variant | n | stalled (test acc < {test['majority_acc'] + STALL_MARGIN:.3f}) "
        "| final test loss ↓ | final test acc ↑ | final val loss ↓ |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for variant in variants(ablation):
        loss = list(values(ablation, variant, "test/loss").values())
        acc = list(values(ablation, variant, "test/acc").values())
        val = list(values(ablation, variant, "val/loss").values())
        runs = sum(1 for r in records(ablation) if r["variant"] == variant)
        lines.append(
            f"| {variant} | {runs} | {stalled(ablation, variant, 'test')} | {mean_std(loss)} | "
            f"{mean_std(acc)} | {mean_std(val)} |"
        )
    lines.append(
        f"| *class prior (trivial)* | – | – | {test['prior_ce']:.3f} | "
        f"{test['majority_acc']:.3f} (majority) | {baselines()['val']['prior_ce']:.3f} |"
    )
    return "\n".join(lines)


def rule(ablation: str) -> Rule:
    d = decisions(ablation)
    return Rule(
        d["metric"],
        d["direction"],
        d["alpha"],
        round(d["alpha"] / d["alpha_per_variant"]),
        d["margin"],
        d["max_seeds"],
    )


def paired(ablation: str, variant: str, reference: str) -> Verdict:
    """`variant` − `reference` on the decided metric, over the seeds both have, judged by the
    anytime-valid confidence sequence at the ablation's per-comparison level."""
    r = rule(ablation)
    metric = r.metric.removeprefix("final.")
    a, b = values(ablation, variant, metric), values(ablation, reference, metric)
    seeds = sorted(set(a) & set(b))
    return judge(variant, seeds, [a[s] - b[s] for s in seeds], r)


def comparisons(ablation: str) -> list[tuple[str, str]]:
    """(variant, reference): each variant against the baseline, as `--until-decided` decided
    them, then pre-norm without warmup against pre-norm with it (claim 2b)."""
    baseline = decisions(ablation)["baseline"]
    pairs = [(v, baseline) for v in variants(ablation) if v != baseline]
    return [*pairs, ("pre+no_warmup", "pre+warmup")]


def check_against_decisions(ablation: str) -> None:
    """The records must give what `--until-decided` decided when it stopped: same seeds, same
    decision; otherwise the records are not the runs it decided on."""
    for item in decisions(ablation)["variants"]:
        mine = paired(ablation, item["variant"], decisions(ablation)["baseline"])
        if (mine.seeds, mine.decision) != (item["seeds"], item["decision"]):
            raise SystemExit(
                f"{ablation}: records give {item['variant']} {mine.decision} on seeds "
                f"{mine.seeds}; decisions.json says {item['decision']} on {item['seeds']}"
            )


def interval(v: Verdict) -> str:
    if v.mean is None:
        return "–"
    low = "−∞" if v.low is None else signed(v.low, 3)
    high = "+∞" if v.high is None else signed(v.high, 3)
    return f"{signed(v.mean, 3)} [{low}, {high}]"


def decisions_block(ablation: str) -> str:
    check_against_decisions(ablation)
    r = rule(ablation)
    lines = [
        f"Δ {r.metric} (lower is better), paired by seed; [{1 - r.level:.2%} anytime-valid "
        f"confidence sequence]; equivalent when it lies within ±{r.margin:g}; seed budget "
        f"{r.max_seeds}.",
        "",
        "| comparison | seeds | Δ [CS] | decision |",
        "|---|---:|---|---|",
    ]
    for variant, reference in comparisons(ablation):
        v = paired(ablation, variant, reference)
        lines.append(f"| {variant} − {reference} | {len(v.seeds)} | {interval(v)} | {v.decision} |")
    return "\n".join(lines)


# --- where post-norm loses its gradient -----------------------------------------------------


def trace_at(record: dict[str, Any], layer: str, step: int) -> float:
    (key,) = (k for k in record["traces"] if k.startswith(f"grad_norm/layer_{layer}/"))
    return dict((int(s), v) for s, v in record["traces"][key])[step]


def last_layer(record: dict[str, Any]) -> str:
    return max((k.split("/")[1].removeprefix("layer_") for k in record["traces"]), key=int)


def traces_block() -> str:
    head = " | ".join(f"step {s}" for s in TRACE_STEPS)
    lines = [
        f"| layers | variant | runs | {head} | first layer < 0.01 at step 40 |",
        "|---|---|---:|" + "---|" * len(TRACE_STEPS) + "---:|",
    ]
    for ablation in ("xiong2020", "xiong2020_depth"):
        done = [r for r in records(ablation) if r["status"] == "completed"]
        for variant in variants(ablation):
            mine = [r for r in done if r["variant"] == variant]
            cells = []
            for step in TRACE_STEPS:
                first = [trace_at(r, "0", step) for r in mine]
                last = [trace_at(r, last_layer(r), step) for r in mine]
                cells.append(
                    f"{np.median(first):.2g} ({min(first):.2g}–{max(first):.2g}) / "
                    f"{np.median(last):.2g}"
                )
            collapsed = sum(trace_at(r, "0", 40) < 0.01 for r in mine)
            depth = int(last_layer(mine[0])) + 1
            lines.append(
                f"| {depth} | {variant} | {len(mine)} | {' | '.join(cells)} | {collapsed} |"
            )
    return "\n".join(lines)


# --- the claims -----------------------------------------------------------------------------


def depth_interaction() -> Verdict:
    """(post no warmup − post warmup) at 12 layers minus the same at 6, paired by seed."""
    r = rule("xiong2020")
    metric = r.metric.removeprefix("final.")

    def effect(ablation: str) -> dict[int, float]:
        a = values(ablation, "post+no_warmup", metric)
        b = values(ablation, "post+warmup", metric)
        return {s: a[s] - b[s] for s in set(a) & set(b)}

    deep, shallow = effect("xiong2020_depth"), effect("xiong2020")
    seeds = sorted(set(deep) & set(shallow))
    return judge("depth", seeds, [deep[s] - shallow[s] for s in seeds], r)


def verdict_text(v: Verdict, outcomes: dict[str, str]) -> str:
    return outcomes.get(v.decision, "undecided at the seed budget")


WORSE_REPRODUCES = {"worse": "reproduced", "better": "reversed", "equivalent": "not reproduced"}
SAME_REPRODUCES = {
    "equivalent": "reproduced",
    "better": "reproduced (lower loss)",
    "worse": "not reproduced",
}


def claims_block() -> str:
    lines = ["| claim | measure | result | verdict |", "|---|---|---|---|"]
    for norm, claim in (
        ("pre", "1. Pre-norm: the last layer's gradient at init falls like L^(-1/2)"),
        ("post", "1. Post-norm: it does not fall with depth (slope about 0)"),
    ):
        text, verdict = slope_claim(norm)
        lines.append(f"| {claim} | fitted slope, Xavier init | {text} | {verdict} |")
    rows: list[tuple[str, str, Callable[[], Verdict], dict[str, str]]] = []
    for ablation, depth in (("xiong2020", 6), ("xiong2020_depth", 12)):
        rows += [
            (
                f"2a. Post-norm trains worse without warmup ({depth} layers)",
                "Δ test loss, post no warmup − post warmup",
                lambda a=ablation: paired(a, "post+no_warmup", "post+warmup"),
                WORSE_REPRODUCES,
            ),
            (
                f"2b. Pre-norm trains as well without warmup ({depth} layers)",
                "Δ test loss, pre no warmup − pre warmup",
                lambda a=ablation: paired(a, "pre+no_warmup", "pre+warmup"),
                SAME_REPRODUCES,
            ),
            (
                f"2d. Pre-norm without warmup matches post-norm with it ({depth} layers)",
                "Δ test loss, pre no warmup − post warmup",
                lambda a=ablation: paired(a, "pre+no_warmup", "post+warmup"),
                SAME_REPRODUCES,
            ),
        ]
    rows.append(
        (
            "2c. Post-norm's need for warmup grows with depth",
            "Δ(12 layers) − Δ(6 layers) of 2a's Δ",
            depth_interaction,
            {"better": "reversed", "worse": "reproduced", "equivalent": "not reproduced"},
        )
    )
    for claim, measure, compute, outcomes in rows:
        v = compute()
        lines.append(
            f"| {claim} | {measure} | {interval(v)} (n={len(v.seeds)}) | "
            f"{verdict_text(v, outcomes)} |"
        )
    return "\n".join(lines)


def compute_block() -> str:
    """What each ablation cost: its runs, their summed wall time, and the wall clock from the
    first run's start to the last run's end (the runs ran side by side)."""
    lines = [
        "| ablation | runs | summed run time | wall clock, first start to last end |",
        "|---|---:|---:|---:|",
    ]
    for ablation in ("xiong2020_lr", "xiong2020", "xiong2020_depth"):
        mine = records(ablation)
        summed = sum(r["wall_time_s"] or 0 for r in mine)
        start = min(datetime.fromisoformat(r["started_at"]) for r in mine)
        end = max(datetime.fromisoformat(r["finished_at"]) for r in mine)
        lines.append(
            f"| {ablation} | {len(mine)} | {summed / 60:.1f} min | "
            f"{(end - start).total_seconds() / 60:.1f} min |"
        )
    return "\n".join(lines)


def blocks() -> dict[str, str]:
    """Name -> rendering of every derived block of the README."""
    return {
        "init-gradients": init_block(),
        "baselines": baselines_block(),
        "lr-sweep": sweep_block(),
        "results-L6": results_block("xiong2020"),
        "decisions-L6": decisions_block("xiong2020"),
        "results-L12": results_block("xiong2020_depth"),
        "decisions-L12": decisions_block("xiong2020_depth"),
        "grad-traces": traces_block(),
        "claims": claims_block(),
        "compute": compute_block(),
    }


def main() -> None:
    derive_cli(__doc__.split("\n\n")[0], README, blocks)


if __name__ == "__main__":
    main()
