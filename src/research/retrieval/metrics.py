"""IR metrics of a retrieval run (nDCG@10, MRR@10, Recall@100), computed by ranx.

Why ranx (Bassani, ECIR 2022): it is maintained, its README states its metrics are tested
against trec_eval, it is a pure-Python package (numba-compiled) that installs beside the
project's torch without a C build, and PyLate evaluates with it. Its "ndcg" uses linear gains as
trec_eval's ndcg_cut does (so figures compare with BEIR's); a judged relevance of 0 counts as
not relevant. `import ranx` takes ~2.3 s (numba), so it is imported inside `evaluate_run`, never
on the CLI path.
"""

from __future__ import annotations

import warnings

# The retrieval metrics this project reports, by ranx name; every retrieval evaluation (the
# LightningModule's `<split>/<metric>` logs, baselines) reads this one list.
DEFAULT_METRICS = ("ndcg@10", "mrr@10", "recall@100")


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
    if not answered:
        return dict.fromkeys(metrics, 0.0)
    # ranx cannot hold a query with no results in a Run, and its make_comparable costs ~10 s of
    # numba compilation: score the answered queries alone, then average over all judged ones.
    with warnings.catch_warnings():
        # numba warns about an integer cast (uint64 -> int64) inside ranx's ndcg; it is harmless
        warnings.simplefilter("ignore", NumbaTypeSafetyWarning)
        per_query = evaluate(
            Qrels({query: judged[query] for query in answered}),
            Run(answered),
            list(metrics),
            return_mean=False,
        )
    if not isinstance(per_query, dict):  # ranx returns a bare array for a single metric
        per_query = {metrics[0]: per_query}
    return {name: float(per_query[name].sum()) / len(judged) for name in metrics}
