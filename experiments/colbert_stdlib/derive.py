"""Every table and verdict of experiments/colbert_stdlib/README.md, re-derived from the files
committed beside it: `baselines*.json` (BM25 and zero-shot dense MiniLM, with per-query scores),
the runs tables of the recipe studies (`report_recipe/runs.csv`, `report_budget/runs.csv`) and the
run records under `runs/` (written by `collect.py`).

    python experiments/colbert_stdlib/derive.py            # print the blocks
    python experiments/colbert_stdlib/derive.py --check    # exit 1 if the README differs
    python experiments/colbert_stdlib/derive.py --write    # rewrite the blocks and the plots

The README's tables sit between `<!-- derived: NAME -->` markers (research.reports.readme_blocks);
tests/experiments/test_study_tables.py runs `--check`'s comparison.
"""

from __future__ import annotations

import json
import math
import statistics
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from research.reports.per_query import behind_value, compare_scores, score_matrices, verdict
from research.reports.plots import save_figure
from research.reports.readme_blocks import derive_cli
from research.reports.run_records import read_records
from research.reports.stats import ALPHA, CONFIDENCE, holm, mean_interval
from research.reports.tables import format_mean_std, signed

HERE = Path(__file__).parent
README = HERE / "README.md"
METRIC = "ndcg@10"
PARTITIONS = (0, 1)
BM25, ZERO_SHOT = "BM25 (bm25s)", "MiniLM mean-pooled, zero-shot"
# The variants of the knob studies that ran on partition 0, the split the knobs were chosen on.
KNOB_STUDIES = {"colbert_recipe": "report_recipe", "colbert_budget": "report_budget"}


# --- inputs ---------------------------------------------------------------------------------


@cache
def baseline(partition: int, split: str = "test") -> dict[str, Any]:
    suffix = (f"_partition{partition}" if partition else "") + (
        f"_{split}" if split != "test" else ""
    )
    return json.loads((HERE / f"baselines{suffix}.json").read_text())


@cache
def records(ablation: str) -> tuple[dict[str, Any], ...]:
    return tuple(r for r in read_records(HERE / "runs" / ablation) if r["status"] == "completed")


def variant_name(method: str, partition: int) -> str:
    return method + ("_partition1" if partition else "")


def runs_of(ablation: str, variant: str) -> list[dict[str, Any]]:
    return [r for r in records(ablation) if r["variant"] == variant]


def best(runs: list[dict[str, Any]], metric: str) -> list[float]:
    return [r["best"][metric] for r in runs]


def random_ndcg(documents: int) -> float:
    """Expected nDCG@10 of a random ranking with one relevant document among `documents`: the
    relevant one is at each rank r <= 10 with probability 1/documents, gaining 1/log2(r + 1)."""
    return sum(1 / math.log2(r + 1) for r in range(1, 11)) / documents


def mean_std_interval(xs: list[float]) -> str:
    found = mean_interval(xs)
    std = statistics.stdev(xs) if len(xs) > 1 else math.nan
    text = format_mean_std(found.mean, std)
    return f"{text} [{found.low:.3f}, {found.high:.3f}]"


# --- baselines ------------------------------------------------------------------------------


def baselines_block() -> str:
    lines = [
        "| split | queries | documents | random | BM25 | MiniLM dense, zero-shot |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for split in ("test", "val"):
        for partition in PARTITIONS:
            b = baseline(partition, split)
            lines.append(
                f"| partition {partition}, {split} | {b['queries']} | {b['documents']} | "
                f"{random_ndcg(b['documents']):.4f} | {b[BM25][METRIC]:.4f} | "
                f"{b[ZERO_SHOT][METRIC]:.4f} |"
            )
    return "\n".join(lines)


# --- knobs chosen on validation -------------------------------------------------------------


@cache
def knob_runs_all(study: str) -> pd.DataFrame:
    """The completed runs of a knob study, from its recorded runs table, by seed."""
    runs = pd.read_csv(HERE / KNOB_STUDIES[study] / "runs.csv")
    return runs[runs["status"] == "completed"].sort_values(["variant", "seed"])


def knob_runs(study: str) -> pd.DataFrame:
    """The partition-0 runs of a knob study: the split its knobs were chosen on."""
    runs = knob_runs_all(study)
    return runs[~runs["variant"].str.endswith("_partition1")]


def knob_choice(study: str) -> str:
    """The partition-0 variant of `study` with the highest mean best val nDCG@10."""
    means = knob_runs(study).groupby("variant")[f"best.val/{METRIC}"].mean()
    return str(means.idxmax())


def knobs_block() -> str:
    lines = [
        "| study | variant | runs | best val nDCG@10, mean ↑ | best test nDCG@10, mean |",
        "|---|---|---:|---:|---:|",
    ]
    for study in KNOB_STUDIES:
        table = (
            knob_runs(study)
            .groupby("variant")
            .agg(
                runs=("seed", "count"),
                val=(f"best.val/{METRIC}", "mean"),
                test=(f"best.test/{METRIC}", "mean"),
            )
        )
        chosen = knob_choice(study)
        for variant, row in table.sort_values("val", ascending=False).iterrows():
            name = f"**{variant}** (chosen)" if variant == chosen else variant
            lines.append(
                f"| {study} | {name} | {int(row['runs'])} | {row['val']:.4f} | {row['test']:.4f} |"
            )
    return "\n".join(lines)


# --- the dense temperature, chosen on validation --------------------------------------------


def temperature_runs() -> dict[float, float]:
    """Temperature -> best val nDCG@10 of its run (one seed, partition 0)."""
    found = {}
    for r in records("colbert_dense_temperature"):
        (value,) = (o.split("=")[1] for o in r["overrides"] if o.startswith("loss.temperature="))
        found[float(value)] = r["best"][f"val/{METRIC}"]
    return dict(sorted(found.items()))


def chosen_temperature() -> float:
    found = temperature_runs()
    return max(found, key=found.__getitem__)


def temperature_block() -> str:
    chosen = chosen_temperature()
    lines = ["| temperature | best val nDCG@10 |", "|---:|---:|"]
    for value, score in temperature_runs().items():
        cell = f"**{score:.4f}** (chosen)" if value == chosen else f"{score:.4f}"
        lines.append(f"| {value:g} | {cell} |")
    return "\n".join(lines)


# --- results --------------------------------------------------------------------------------


def results_block() -> str:
    lines = [
        "| partition | model | runs | best test nDCG@10 ± std [95% t-interval] | per seed | "
        "test MRR@10 | test Recall@100 | best val nDCG@10 |",
        "|---|---|---:|---|---|---:|---:|---:|",
    ]
    for partition in PARTITIONS:
        b = baseline(partition)
        for label, method in (("ColBERT (late)", "late"), ("dense, fine-tuned", "dense")):
            runs = runs_of("colbert_dense", variant_name(method, partition))
            scores = best(runs, f"test/{METRIC}")
            per_seed = " / ".join(f"{x:.4f}" for x in scores)
            lines.append(
                f"| {partition} | {label} | {len(runs)} | {mean_std_interval(scores)} | "
                f"{per_seed} | {statistics.fmean(best(runs, 'test/mrr@10')):.4f} | "
                f"{statistics.fmean(best(runs, 'test/recall@100')):.4f} | "
                f"{statistics.fmean(best(runs, f'val/{METRIC}')):.4f} |"
            )
        earlier = knob_runs_all("colbert_budget")
        earlier = earlier[earlier["variant"] == variant_name("recipe", partition)]
        test = earlier[f"best.test/{METRIC}"].tolist()
        lines.append(
            f"| {partition} | ColBERT at lr 5e-5 (colbert_budget, validated once) | "
            f"{len(earlier)} | {mean_std_interval(test)} | "
            f"{' / '.join(f'{x:.4f}' for x in test)} | "
            f"{earlier['best.test/mrr@10'].mean():.4f} | "
            f"{earlier['best.test/recall@100'].mean():.4f} | "
            f"{earlier[f'best.val/{METRIC}'].mean():.4f} |"
        )
        for label, method in (("dense, zero-shot", ZERO_SHOT), ("BM25", BM25)):
            lines.append(
                f"| {partition} | {label} | – | {b[method][METRIC]:.4f} | – | "
                f"{b[method]['mrr@10']:.4f} | {b[method]['recall@100']:.4f} | "
                f"{baseline(partition, 'val')[method][METRIC]:.4f} |"
            )
        lines.append(
            f"| {partition} | random | – | {random_ndcg(b['documents']):.4f} | – | – | – | – |"
        )
    return "\n".join(lines)


# --- query by query -------------------------------------------------------------------------

SYSTEMS = {
    "late": "ColBERT",
    "dense": "dense fine-tuned",
    ZERO_SHOT: "dense zero-shot",
    BM25: "BM25",
}
PAIRS = (
    ("late", "dense"),
    ("late", BM25),
    ("late", ZERO_SHOT),
    ("dense", BM25),
    ("dense", ZERO_SHOT),
)


def scores_of(system: str, partition: int) -> list[dict[str, float]]:
    """Per-query test nDCG@10 of a system: one dict per run (seed), or the baseline's one."""
    if system in (BM25, ZERO_SHOT):
        return [baseline(partition)[system]["per_query"][METRIC]]
    found = []
    for r in runs_of("colbert_dense", variant_name(system, partition)):
        scores = r["per_query"]["test"][METRIC]
        # the per-query file must be the evaluation behind the run's value, not a later one
        if not behind_value(scores, r["best"][f"test/{METRIC}"]):
            raise SystemExit(f"{r['variant']} seed {r['seed']}: per-query scores are not its test")
        found.append(scores)
    return found


class Paired(NamedTuple):
    partition: int
    system: str
    reference: str
    diff: float
    low: float
    high: float
    p: float
    p_holm: float
    queries: int
    seed_diffs: list[float]  # per seed, system - reference (fine-tuned pairs only)

    @property
    def verdict(self) -> str:
        return verdict(self.diff, self.low, self.high, self.p_holm, "max")


@cache
def paired() -> tuple[Paired, ...]:
    """Every pair of PAIRS on each partition, paired by query (each query's score averaged over
    a system's seeds), p Holm-adjusted over all of them."""
    raw = []
    for partition in PARTITIONS:
        for system, reference in PAIRS:
            pools = [scores_of(system, partition), scores_of(reference, partition)]
            queries, (a, b) = score_matrices(pools)
            diff, low, high, p = compare_scores(b, a)
            seeds = (a.mean(axis=1) - b.mean(axis=1)).tolist() if len(a) == len(b) > 1 else []
            raw.append((partition, system, reference, diff, low, high, p, len(queries), seeds))
    adjusted = holm([r[6] for r in raw])
    return tuple(Paired(*r[:7], q, r[7], r[8]) for r, q in zip(raw, adjusted, strict=True))


def paired_block() -> str:
    lines = [
        "| partition | comparison | Δ test nDCG@10 [95% t-interval over queries] | p (Holm) | "
        "queries | per seed | verdict |",
        "|---|---|---|---:|---:|---|---|",
    ]
    for c in paired():
        seeds = " / ".join(signed(x, 4) for x in c.seed_diffs) or "–"
        lines.append(
            f"| {c.partition} | {SYSTEMS[c.system]} − {SYSTEMS[c.reference]} | "
            f"{signed(c.diff, 4)} [{signed(c.low, 4)}, {signed(c.high, 4)}] | {c.p_holm:.2g} | "
            f"{c.queries} | {seeds} | {c.verdict} |"
        )
    lines += [
        "",
        f"Each query's nDCG@10 is averaged over a model's seeds; Δ is the mean over the test "
        f"queries of the difference; the interval is Student's t over queries ({CONFIDENCE:.0%}); "
        f"p is the paired randomization test (signs flipped), Holm-adjusted over the "
        f"{len(paired())} comparisons; **better**/**worse** when p < {ALPHA} and the interval "
        "excludes 0, else noise. *Per seed*: the same difference for each seed pair (s0 / s1 / "
        "s2), training noise on these queries.",
    ]
    return "\n".join(lines)


# --- the claims -----------------------------------------------------------------------------

OUTCOME = {"better": "reproduced", "worse": "reversed", "noise": "not reproduced"}


def claims_block() -> str:
    claims = {
        ("late", BM25): "Fine-tuned ColBERT retrieves better than BM25",
        ("late", "dense"): "Late interaction beats a single-vector model trained the same way",
    }
    lines = ["| claim | partition | Δ test nDCG@10 [95% CI over queries], p (Holm) | verdict |"]
    lines.append("|---|---:|---|---|")
    for (system, reference), claim in claims.items():
        for c in paired():
            if (c.system, c.reference) == (system, reference):
                lines.append(
                    f"| {claim} | {c.partition} | {signed(c.diff, 4)} [{signed(c.low, 4)}, "
                    f"{signed(c.high, 4)}], p {c.p_holm:.2g} | {OUTCOME[c.verdict]} |"
                )
    return "\n".join(lines)


# --- cost -----------------------------------------------------------------------------------


def compute_block() -> str:
    lines = [
        "| ablation | variant | runs | run time per run | summed | first start to last end |",
        "|---|---|---:|---|---:|---:|",
    ]
    for ablation in ("colbert_dense_temperature", "colbert_dense"):
        mine = records(ablation)
        start = min(datetime.fromisoformat(r["started_at"]) for r in mine)
        end = max(datetime.fromisoformat(r["finished_at"]) for r in mine)
        for variant in dict.fromkeys(r["variant"] for r in mine):
            times = [r["wall_time_s"] for r in mine if r["variant"] == variant]
            spread = f"{min(times):.0f}–{max(times):.0f}" if len(times) > 1 else f"{times[0]:.0f}"
            lines.append(f"| {ablation} | {variant} | {len(times)} | {spread} s | | |")
        summed = sum(r["wall_time_s"] for r in mine)
        lines.append(
            f"| {ablation} | all | {len(mine)} | | {summed / 60:.1f} min | "
            f"{(end - start).total_seconds() / 60:.1f} min |"
        )
    return "\n".join(lines)


# --- plots ----------------------------------------------------------------------------------


def plot_test(path: Path) -> None:
    """Test nDCG@10 per model and partition: bars at the seed mean, a dot per seed, reference
    lines at BM25, the zero-shot dense model and random."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.6))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, partition in zip(axes, PARTITIONS, strict=True):
        b = baseline(partition)
        for x, method in enumerate(("late", "dense")):
            scores = best(
                runs_of("colbert_dense", variant_name(method, partition)), f"test/{METRIC}"
            )
            ax.bar(x, statistics.fmean(scores), width=0.6, color=f"C{x}", alpha=0.6)
            ax.plot([x] * len(scores), scores, "k.", ms=5)
        for value, style, label in (
            (b[ZERO_SHOT][METRIC], "--", "dense zero-shot"),
            (b[BM25][METRIC], ":", "BM25"),
            (random_ndcg(b["documents"]), "-.", "random"),
        ):
            ax.axhline(value, color="grey", linestyle=style, label=label)
        ax.set_xticks([0, 1], ["ColBERT", "dense\nfine-tuned"])
        ax.set_title(f"partition {partition} ({b['queries']} test queries)")
    axes[0].set_ylabel("best test nDCG@10")
    axes[0].set_ylim(0, 1)
    axes[1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def blocks() -> dict[str, str]:
    """Name -> rendering of every derived block of the README."""
    return {
        "baselines": baselines_block(),
        "knobs": knobs_block(),
        "temperature": temperature_block(),
        "results": results_block(),
        "paired": paired_block(),
        "claims": claims_block(),
        "compute": compute_block(),
    }


def plots() -> None:
    plot_test(HERE / "bar_test_ndcg10.png")


def main() -> None:
    derive_cli(__doc__.split("\n\n")[0], README, blocks, on_write=plots)


if __name__ == "__main__":
    main()
