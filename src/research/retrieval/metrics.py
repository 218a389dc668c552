"""IR metrics of a retrieval run (nDCG@10, MRR@10, Recall@100), computed by ranx.

Why ranx (Bassani, ECIR 2022): it is maintained, its README states its metrics are tested
against trec_eval, it is a pure-Python package (numba-compiled) that installs beside the
project's torch without a C build, and PyLate evaluates with it. Its "ndcg" uses linear gains as
trec_eval's ndcg_cut does (so figures compare with BEIR's); a judged relevance of 0 counts as
not relevant. `import ranx` takes ~2.3 s (numba), so it is imported inside `per_query`, never
on the CLI path.

Each evaluation also keeps its per-query scores (`per_query_<split>.json` in the run dir): a mean
alone cannot say whether a lead over another run exceeds the sampling error of the test queries;
`research.reports.per_query` compares runs query by query from these files, without ranx or torch.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

from research.utils.atomic import write_atomic

# The retrieval metrics this project reports, by ranx name; every retrieval evaluation (the
# LightningModule's `<split>/<metric>` logs, baselines) reads this one list.
DEFAULT_METRICS = ("ndcg@10", "mrr@10", "recall@100")
# A split's per-query scores in a run dir: {metric: {query id: score}} over every judged query.
PER_QUERY_FILE = "per_query_{split}.json"


def evaluate_run(
    run: dict[str, dict[str, float]],
    qrels: dict[str, dict[str, int]],
    metrics: tuple[str, ...] = DEFAULT_METRICS,
) -> dict[str, float]:
    """Mean of each metric over the judged queries of `qrels` (query id -> {doc id: relevance}).

    `run` maps query id -> {doc id: score}. A judged query missing from the run, or with no
    results, scores 0 (if no judged query has results, every metric is 0 and ranx is not
    called); run queries without judgements are ignored. Ids are compared as strings.
    """
    return {name: mean_score(scores) for name, scores in per_query(run, qrels, metrics).items()}


def mean_score(scores: dict[str, float]) -> float:
    """The mean of one metric's per-query scores (what `evaluate_run` reports)."""
    return math.fsum(scores.values()) / len(scores)


def per_query(
    run: dict[str, dict[str, float]],
    qrels: dict[str, dict[str, int]],
    metrics: tuple[str, ...] = DEFAULT_METRICS,
) -> dict[str, dict[str, float]]:
    """Each metric's score per judged query ({metric: {query id: score}}), counted as
    `evaluate_run` counts them: what a paired comparison of two runs over queries needs."""
    from numba.core.errors import NumbaTypeSafetyWarning
    from ranx import Qrels, Run, evaluate

    if not metrics:
        raise ValueError("evaluate_run needs at least one metric name, e.g. 'ndcg@10'")
    judged = {
        str(query): {str(doc): int(rel) for doc, rel in docs.items()}
        for query, docs in qrels.items()
        if docs
    }
    if not judged:
        raise ValueError("evaluate_run got qrels without any judged query; nothing to evaluate")
    answered = {
        str(query): {str(doc): float(score) for doc, score in docs.items()}
        for query, docs in run.items()
        if docs and str(query) in judged
    }
    scores = {name: dict.fromkeys(judged, 0.0) for name in metrics}
    if not answered:
        return scores
    # ranx cannot hold a query with no results in a Run, and its make_comparable costs ~10 s of
    # numba compilation: score the answered queries alone, then average over all judged ones.
    with warnings.catch_warnings():
        # numba warns about an integer cast (uint64 -> int64) inside ranx's ndcg; it is harmless
        warnings.simplefilter("ignore", NumbaTypeSafetyWarning)
        ranked = Run(answered)
        evaluate(Qrels({query: judged[query] for query in answered}), ranked, list(metrics))
    for name in metrics:  # ranx keeps each query's score in the Run, by query id
        scores[name].update((query, float(x)) for query, x in ranked.scores[name].items())
    return scores


def write_per_query(run_dir: Path, split: str, scores: dict[str, dict[str, float]]) -> Path:
    """Write a split's per-query scores into `run_dir` (whole or not at all); return the file."""
    path = Path(run_dir) / PER_QUERY_FILE.format(split=split)
    write_atomic(path, json.dumps(scores, separators=(",", ":")) + "\n")
    return path


def read_per_query(run_dir: Path, split: str) -> dict[str, dict[str, float]] | None:
    """A run's per-query scores of `split`, or None when it has none or the file is not what
    `write_per_query` writes (a damaged or foreign file: not an object of objects of numbers)."""
    try:
        data = json.loads((Path(run_dir) / PER_QUERY_FILE.format(split=split)).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        return None
    values = [x for v in data.values() for x in v.values()]
    if not all(
        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in values
    ):
        return None
    return {str(m): {str(q): float(x) for q, x in v.items()} for m, v in data.items()}
