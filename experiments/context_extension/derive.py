"""Every table, verdict and perplexity plot of experiments/context_extension/README.md, re-derived
from the files committed beside it: the run records under `runs/context_extension/` (the study)
and `runs/context_extension_budget/` (the training budget), written by `evaluate.py`, and
`unigram.json` (`unigram.py`).

    python experiments/context_extension/derive.py            # print the blocks
    python experiments/context_extension/derive.py --check    # exit 1 if the README differs
    python experiments/context_extension/derive.py --write    # rewrite the blocks and the plots

How a claim is decided: each is a difference of test perplexities over the seeds. Where both
sides are the same trained model (one model at two lengths, under two scalings, or fine-tuned
two ways) the seed pairs them and the interval is the paired Student-t interval of the per-seed
differences (n = 3 seeds: 2 degrees of freedom); between position schemes, which are different
models, it is Welch's interval. A claim is reproduced when its 95% interval lies on the side of 0
the paper claims, reversed when it lies on the other side, and not reproduced when it holds 0.
The intervals are per comparison; the Holm-adjusted p over all of them stands beside each, and
the README says which verdicts survive it. Every perplexity is over the same 65,536 test tokens,
so the intervals describe seed-to-seed variation, not the sampling of the test text.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from research.reports.plots import save_figure
from research.reports.readme_blocks import derive_cli
from research.reports.run_records import read_records
from research.reports.stats import holm, t_test, welch_test
from research.reports.tables import signed

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from position_loss import context_cells, format_gain  # noqa: E402

README = HERE / "README.md"
STUDY, BUDGET = "context_extension", "context_extension_budget"
POSITIONS = ("none", "learned", "sinusoidal", "rope")
SCALINGS = ("linear", "ntk", "dynamic", "yarn")
POSITION_NAMES = {"none": "NoPE (none)", "learned": "learned", "sinusoidal": "sinusoidal"}
POSITION_NAMES["rope"] = "RoPE"
METHOD_NAMES = {"none": "no scaling (control)", "linear": "linear (PI)", "ntk": "NTK-aware"}
METHOD_NAMES |= {"dynamic": "dynamic NTK", "yarn": "YaRN"}
# A scheme "learned" when it beats the unigram baseline at L by this factor in perplexity.
LEARNED_FACTOR = 4.0
PLOT_CEILING = 100.0  # perplexity; the unigram baseline is about 580


# --- inputs ---------------------------------------------------------------------------------


@cache
def records(ablation: str) -> tuple[dict[str, Any], ...]:
    """The completed runs' records of an ablation, by variant then seed."""
    found = read_records(HERE / "runs" / ablation)
    return tuple(r for r in found if r["status"] == "completed")


def runs_of(position: str) -> list[dict[str, Any]]:
    return [r for r in records(STUDY) if r["variant"] == position]


@cache
def unigram() -> dict[str, float]:
    return json.loads((HERE / "unigram.json").read_text())


def context_length(record: dict[str, Any]) -> int:
    return record["evaluation"]["context_length"]


def lengths(record: dict[str, Any]) -> list[int]:
    """L and every longer length the run was tested at (its `test/ppl@n` metrics)."""
    found = {int(k.split("@")[1]) for k in record["final"] if k.startswith("test/ppl@")}
    return sorted({context_length(record), *found})


def trained_ppl(record: dict[str, Any], n: int) -> float:
    key = "test/ppl" if n == context_length(record) else f"test/ppl@{n}"
    return record["final"][key]


def scaled_ppl(record: dict[str, Any], method: str, n: int) -> float:
    """RoPE under `method` at factor n / L read at n (dynamic NTK: its fixed factor, scale n /
    L); at L every scaling is the identity, and method "none" is no scaling: the model as
    trained."""
    if method == "none" or n == context_length(record):
        return trained_ppl(record, n)
    return record["evaluation"]["scaled"][method][str(n)]["ppl"]


def tuned_ppl(record: dict[str, Any], method: str, steps: int, n: int) -> float:
    return record["evaluation"]["finetuned"][str(steps)][method]["ppl"][str(n)]


def budgets() -> list[int]:
    """The fine-tuning budgets every RoPE run was fine-tuned at."""
    found = [set(map(int, r["evaluation"]["finetuned"])) for r in runs_of("rope")]
    return sorted(set.intersection(*found))


def study_lengths() -> list[int]:
    return lengths(records(STUDY)[0])


def context() -> int:
    return context_length(records(STUDY)[0])


def budget_runs() -> list[dict[str, Any]]:
    """The budget study's runs, from the shortest training to the longest."""
    return sorted(records(BUDGET), key=lambda r: r["final"]["step"])


def chosen_epochs() -> int:
    """The study's training budget: the smallest budget of the budget study at which the RoPE
    model meets the criterion on the validation windows (a knob, so chosen on validation)."""
    met = [r for r in budget_runs() if r["evaluation"]["context"]["val"]["uses_whole_context"]]
    if not met:
        raise SystemExit(f"no budget of {BUDGET} meets the criterion on validation")
    key = "trainer.max_epochs="
    return int([o for o in met[0]["overrides"] if o.startswith(key)][-1][len(key) :])


def learned(position: str) -> bool:
    """Whether the scheme's runs beat the unigram baseline at L by LEARNED_FACTOR."""
    mean = statistics.mean(trained_ppl(r, context()) for r in runs_of(position))
    return mean * LEARNED_FACTOR < unigram()["ppl"]


# --- cells ----------------------------------------------------------------------------------


def cell(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


# --- tables ---------------------------------------------------------------------------------


def budget_block() -> str:
    """The RoPE model at each training budget: perplexities, wall time, the criterion."""
    runs = budget_runs()
    ns = lengths(runs[0])
    lines = [
        "| budget | steps | "
        + " | ".join(f"ppl@{n}" for n in ns)
        + " | run | val gain [95% CI] | test gain [95% CI] | uses whole context (val) |",
        "|---|---:|" + "---:|" * len(ns) + "---:|---:|---:|---|",
    ]
    for run in runs:
        found = run["evaluation"]["context"]
        lines.append(
            f"| {run['variant']} | {run['final']['step']:,} | "
            + " | ".join(f"{trained_ppl(run, n):.1f}" for n in ns)
            + f" | {run['wall_time_s']:.0f} s | {format_gain(found['val'])} | {format_gain(found)} "
            f"| {'yes' if found['val']['uses_whole_context'] else 'no'} |"
        )
    return "\n".join(lines)


def trained_block() -> str:
    """Each position scheme as trained: perplexity per length, mean ± std over seeds."""
    ns = study_lengths()
    lines = [
        "| position | seeds | "
        + " | ".join(f"ppl@{n}" for n in ns)
        + f" | ppl@{ns[-1]} / ppl@{ns[0]} | best epoch |",
        "|---|---:|" + "---:|" * len(ns) + "---:|---|",
    ]
    for position in POSITIONS:
        runs = runs_of(position)
        ratio = [trained_ppl(r, ns[-1]) / trained_ppl(r, ns[0]) for r in runs]
        epochs = sorted({f"{r['best']['epoch'] + 1} of {len(r['history'])}" for r in runs})
        lines.append(
            f"| {POSITION_NAMES[position]} | {len(runs)} | "
            + " | ".join(cell([trained_ppl(r, n) for r in runs]) for n in ns)
            + f" | {statistics.mean(ratio):.2f} | {', '.join(epochs)} |"
        )
    lines.append(
        f"| unigram (train token frequencies) | – | {unigram()['ppl']:.1f} | "
        + " | ".join("" for _ in ns[1:])
        + " |  |  |"
    )
    return "\n".join(lines)


def scaled_block() -> str:
    """RoPE with each scaling, no fine-tuning, with the scale it applies at each length."""
    rope, ns = runs_of("rope"), study_lengths()
    longer = ns[1:]
    lines = [
        "| RoPE, no fine-tuning | scale at "
        + "/".join(map(str, longer))
        + " | "
        + " | ".join(f"ppl@{n}" for n in ns)
        + " |",
        "|---|---|" + "---:|" * len(ns),
    ]
    lines.append(
        "| as trained (no scaling) | "
        + "/".join("1" for _ in longer)
        + " | "
        + " | ".join(cell([trained_ppl(r, n) for r in rope]) for n in ns)
        + " |"
    )
    for method in SCALINGS:
        scales = rope[0]["evaluation"]["scaled"][method]
        scale = "/".join(f"{scales[str(n)]['scale']:g}" for n in longer)
        lines.append(
            f"| {METHOD_NAMES[method]} | {scale} | "
            + " | ".join(cell([scaled_ppl(r, method, n) for r in rope]) for n in ns)
            + " |"
        )
    return "\n".join(lines)


def finetuned_block() -> str:
    """Per length L, 4L, 8L: each scaling (and the control) without fine-tuning and after
    each fine-tuning budget at 4L."""
    rope, ns, steps = runs_of("rope"), study_lengths(), budgets()
    out = []
    for n in (ns[0], 4 * ns[0], ns[-1]):
        out.append(f"Test ppl@{n} ({n // ns[0]}L):\n")
        out.append(
            "| scaling | scale here after fine-tuning | no fine-tuning (scale k at kL) | "
            + " | ".join(f"{s} steps" for s in steps)
            + " |"
        )
        out.append("|---|---:|---:|" + "---:|" * len(steps))
        for method in ("none", *SCALINGS):
            scale = rope[0]["evaluation"]["finetuned"][str(steps[0])][method]["scale"][str(n)]
            before = [scaled_ppl(r, method, n) for r in rope]
            after = [cell([tuned_ppl(r, method, s, n) for r in rope]) for s in steps]
            row = f"| {METHOD_NAMES[method]} | {scale:g} | {cell(before)} | "
            out.append(row + " | ".join(after) + " |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def context_block() -> str:
    """The criterion at L for every run of the study, on validation and test windows."""
    lines = [
        "| position | seed | val gain [95% CI] | val: uses whole context | test gain [95% CI] "
        "| test: uses whole context |",
        "|---|---:|---:|---|---:|---|",
    ]
    for position in POSITIONS:
        for run in runs_of(position):
            found = run["evaluation"]["context"]
            lines.append(f"| {POSITION_NAMES[position]} | {run['seed']} | {context_cells(found)} |")
    return "\n".join(lines)


def cost_block() -> str:
    """Wall time of the training runs, per scheme."""
    lines = ["| runs | wall time per run | in all |", "|---|---:|---:|"]
    for position in POSITIONS:
        times = [r["wall_time_s"] for r in runs_of(position)]
        lines.append(
            f"| {POSITION_NAMES[position]} × {len(times)} | {min(times):.0f}–{max(times):.0f} s "
            f"| {sum(times) / 60:.1f} min |"
        )
    return "\n".join(lines)


# --- claims ---------------------------------------------------------------------------------


class Comparison(NamedTuple):
    """One tested difference: a - b per seed (paired) or between two sets of runs (Welch);
    `sign` is the side of 0 the paper claims (+1: a > b)."""

    claim: str
    what: str
    a: tuple[float, ...]
    b: tuple[float, ...]
    paired: bool
    sign: int
    unit: str = "ppl"


class Decided(NamedTuple):
    comparison: Comparison
    mean: float
    low: float
    high: float
    p: float
    p_holm: float

    @property
    def verdict(self) -> str:
        side = self.comparison.sign
        if (self.low > 0 and side > 0) or (self.high < 0 and side < 0):
            return "reproduced"
        if (self.low > 0 and side < 0) or (self.high < 0 and side > 0):
            return "reversed"
        return "not reproduced"


def _pair(
    claim: str, what: str, a: Callable[[dict], float], b: Callable[[dict], float], sign: int
) -> Comparison:
    rope = runs_of("rope")
    return Comparison(claim, what, tuple(map(a, rope)), tuple(map(b, rope)), True, sign)


def comparisons() -> list[Comparison]:
    """Every comparison behind a verdict, claim by claim (the README's "The claims")."""
    L, ns, steps = context(), study_lengths(), budgets()
    top, long = ns[-1], 4 * context()
    found = []
    for position in ("learned", "sinusoidal", "rope"):
        if not learned(position):
            continue
        runs = runs_of(position)
        found.append(
            Comparison(
                "Extrapolation fails",
                f"{POSITION_NAMES[position]}: ppl@{top} − ppl@{L}",
                tuple(trained_ppl(r, top) for r in runs),
                tuple(trained_ppl(r, L) for r in runs),
                True,
                +1,
            )
        )
    pi = "Position interpolation (PI)"
    found.append(
        _pair(
            pi,
            f"ppl@{long}: PI without fine-tuning − PI after {steps[-1]} steps",
            lambda r: scaled_ppl(r, "linear", long),
            lambda r: tuned_ppl(r, "linear", steps[-1], long),
            +1,
        )
    )
    found.append(
        _pair(
            pi,
            f"after PI fine-tuning ({steps[-1]} steps): ppl@{long} − ppl@{L}",
            lambda r: tuned_ppl(r, "linear", steps[-1], long),
            lambda r: tuned_ppl(r, "linear", steps[-1], L),
            -1,
        )
    )
    for s in steps:
        found.append(
            _pair(
                pi,
                f"ppl@{long} after {s} steps: no scaling − PI",
                lambda r, s=s: tuned_ppl(r, "none", s, long),
                lambda r, s=s: tuned_ppl(r, "linear", s, long),
                +1,
            )
        )
    for n in ns[1:]:
        found.append(
            _pair(
                "NTK-aware",
                f"no fine-tuning, ppl@{n}: PI − NTK",
                lambda r, n=n: scaled_ppl(r, "linear", n),
                lambda r, n=n: scaled_ppl(r, "ntk", n),
                +1,
            )
        )
    # Without fine-tuning, dynamic NTK applies NTK's scale at every kL: the same model, so
    # YaRN is compared with PI and NTK only.
    for other in ("linear", "ntk"):
        for n in (long, top):
            found.append(
                _pair(
                    "YaRN",
                    f"no fine-tuning, ppl@{n}: {METHOD_NAMES[other]} − YaRN",
                    lambda r, n=n, other=other: scaled_ppl(r, other, n),
                    lambda r, n=n: scaled_ppl(r, "yarn", n),
                    +1,
                )
            )
    for other in ("linear", "ntk"):
        for s in steps:
            found.append(
                _pair(
                    "YaRN",
                    f"ppl@{long} after {s} steps: {METHOD_NAMES[other]} − YaRN",
                    lambda r, s=s, other=other: tuned_ppl(r, other, s, long),
                    lambda r, s=s: tuned_ppl(r, "yarn", s, long),
                    +1,
                )
            )
    nope = runs_of("none")
    for position in ("learned", "rope"):
        runs = runs_of(position)
        found.append(
            Comparison(
                "NoPE",
                f"ln(ppl@{top} / ppl@{L}): {POSITION_NAMES[position]} − NoPE",
                tuple(math.log(trained_ppl(r, top) / trained_ppl(r, L)) for r in runs),
                tuple(math.log(trained_ppl(r, top) / trained_ppl(r, L)) for r in nope),
                False,
                +1,
                "nats",
            )
        )
    found.append(
        Comparison(
            "NoPE",
            f"ppl@{top}: RoPE − NoPE",
            tuple(trained_ppl(r, top) for r in runs_of("rope")),
            tuple(trained_ppl(r, top) for r in nope),
            False,
            +1,
        )
    )
    return found


@cache
def decided() -> tuple[Decided, ...]:
    tested = []
    for c in comparisons():
        a, b = np.asarray(c.a, dtype=float), np.asarray(c.b, dtype=float)
        found = t_test(a - b) if c.paired else welch_test(a, b)
        tested.append((c, float(found.mean), float(found.low), float(found.high), float(found.p)))
    adjusted = holm([p for *_, p in tested])
    return tuple(Decided(*t, p_holm) for t, p_holm in zip(tested, adjusted, strict=True))


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def verdicts_block() -> str:
    lines = [
        "| claim | difference (claimed > 0 unless marked) | test | Δ [95% CI] | p | "
        "Holm p | verdict |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for d in decided():
        c = d.comparison
        places = 3 if c.unit == "nats" else 2
        what = c.what + (" (claimed < 0)" if c.sign < 0 else "")
        test = f"paired, n={len(c.a)}" if c.paired else f"Welch, {len(c.a)} vs {len(c.b)}"
        lines.append(
            f"| {c.claim} | {what} | {test} | {signed(d.mean, places)} {c.unit} "
            f"[{signed(d.low, places)}, {signed(d.high, places)}] | {_p(d.p)} | "
            f"{_p(d.p_holm)} | **{d.verdict}** |"
        )
    return "\n".join(lines)


def blocks() -> dict[str, str]:
    return {
        "budget": budget_block(),
        "trained": trained_block(),
        "scaled": scaled_block(),
        "finetuned": finetuned_block(),
        "context": context_block(),
        "verdicts": verdicts_block(),
        "cost": cost_block(),
    }


# --- plots ----------------------------------------------------------------------------------


def _series(panel: Any, label: str, xs: list[int], values: list[list[float]]) -> None:
    means = [statistics.mean(v) for v in values]
    spread = [statistics.stdev(v) if len(v) > 1 else 0.0 for v in values]
    panel.errorbar(xs, means, yerr=spread, marker="o", capsize=3, label=label)


def plot_lengths(path: Path) -> None:
    """Perplexity against evaluation length: the schemes as trained and RoPE's scalings without
    fine-tuning, and each scaling after the largest fine-tuning budget; the y axis stops at
    PLOT_CEILING, and a scheme that did not learn is named under the panel instead."""
    from matplotlib.figure import Figure

    ns, rope, last = study_lengths(), runs_of("rope"), budgets()[-1]
    figure = Figure(figsize=(11, 4.5))
    axes = figure.subplots(1, 2, sharey=True)
    off_scale = [POSITION_NAMES[p] for p in POSITIONS if not learned(p)]
    for position in POSITIONS:
        if learned(position):
            runs = runs_of(position)
            values = [[trained_ppl(r, n) for r in runs] for n in ns]
            _series(axes[0], f"{POSITION_NAMES[position]}, as trained", ns, values)
    for method in SCALINGS:
        values = [[scaled_ppl(r, method, n) for r in rope] for n in ns]
        _series(axes[0], f"RoPE + {METHOD_NAMES[method]}", ns, values)
    for method in ("none", *SCALINGS):
        values = [[tuned_ppl(r, method, last, n) for r in rope] for n in ns]
        _series(axes[1], f"RoPE + {METHOD_NAMES[method]}", ns, values)
    axes[0].set(title="without fine-tuning (scale k at kL)", ylabel="test ppl")
    axes[1].set(title=f"after {last} fine-tuning steps at 4L (factor 4)")
    for axis in axes:
        axis.set(xscale="log", xlabel="evaluation length (tokens)", ylim=(None, PLOT_CEILING))
        axis.set_xticks(ns, [str(n) for n in ns])
        axis.minorticks_off()
        axis.legend(fontsize=7)
    if off_scale:
        note = "off scale: " + ", ".join(off_scale)
        axes[0].text(0.02, 0.02, note, fontsize=7, transform=axes[0].transAxes)
    figure.tight_layout()
    save_figure(figure, path)


def plot_budgets(path: Path) -> None:
    """Perplexity at 4L and 8L against the fine-tuning budget (0: no fine-tuning), one line per
    scaling: how fast each recovers, the subject of PI's and YaRN's claims."""
    from matplotlib.figure import Figure

    rope, steps, ns = runs_of("rope"), budgets(), study_lengths()
    shown = [n for n in ns if n >= 4 * ns[0]]
    figure = Figure(figsize=(5.5 * len(shown), 4.5))
    axes = figure.subplots(1, len(shown), squeeze=False)
    xs = list(range(len(steps) + 1))
    for axis, n in zip(axes[0], shown, strict=True):
        for method in ("none", *SCALINGS):
            before = [scaled_ppl(r, method, n) for r in rope]
            values = [before, *([tuned_ppl(r, method, s, n) for r in rope] for s in steps)]
            _series(axis, METHOD_NAMES[method], xs, values)
        axis.set(xlabel="fine-tuning steps at 4L", title=f"test ppl@{n}")
        axis.set_xticks(xs, ["none", *map(str, steps)])
        axis.legend(fontsize=7)
    axes[0][0].set(ylabel="test ppl (mean ± std over seeds)")
    figure.tight_layout()
    save_figure(figure, path)


def plots() -> None:
    plot_lengths(HERE / "ppl_vs_length.png")
    plot_budgets(HERE / "finetune_budgets.png")


def main() -> None:
    derive_cli(__doc__.split("\n\n")[0], README, blocks, on_write=plots)


if __name__ == "__main__":
    main()
