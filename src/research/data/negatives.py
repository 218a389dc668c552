"""Hard negatives for contrastive training: the BM25 top documents of a query that it does not own.

BM25 negatives are the usual choice for training dense retrievers (DPR, Karpukhin et al. 2020,
sec. 3.2: "top passages returned by BM25 which don't contain the answer"); the ranking is
`research.retrieval.bm25`. The result depends on nothing but its inputs, and is cached as JSON
lines under a key hashed from every input.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from research.retrieval.bm25 import TOKEN_PATTERN, bm25_rank
from research.utils.atomic import write_atomic

log = logging.getLogger(__name__)

FORMAT = "bm25s-lucene-v1"


def mine_bm25_negatives(
    corpus: Mapping[str, str],
    queries: Mapping[str, str],
    positives: Mapping[str, Sequence[str]],
    n: int,
) -> dict[str, list[str]]:
    """For every query, its `n` best-ranked corpus documents that are not among its positives."""
    doc_ids = sorted(corpus)
    for query in queries:
        owned = len(set(positives.get(query, ())) & corpus.keys())
        if len(doc_ids) - owned < n:
            raise ValueError(
                f"cannot mine {n} negatives for query {query!r}: the corpus has only "
                f"{len(doc_ids) - owned} documents that are not its positives"
            )
    query_ids = sorted(queries)
    if not query_ids or not n:
        return {query: [] for query in query_ids}
    depth = min(len(doc_ids), n + max(len(positives.get(query, ())) for query in query_ids))
    ranked = bm25_rank(corpus, queries, depth)
    mined = {}
    for query in query_ids:
        owned = set(positives.get(query, ()))
        mined[query] = [doc for doc, _ in ranked[query] if doc not in owned][:n]
    return mined


def _key(
    corpus: Mapping[str, str],
    queries: Mapping[str, str],
    positives: Mapping[str, Sequence[str]],
    n: int,
) -> str:
    """A digest of everything the result depends on, so a changed input never reads a stale file."""
    digest = hashlib.sha1(json.dumps([FORMAT, TOKEN_PATTERN, n]).encode())
    for doc in sorted(corpus):
        digest.update(json.dumps(["d", doc, corpus[doc]]).encode())
    for query in sorted(queries):
        owned = sorted(positives.get(query, ()))
        digest.update(json.dumps(["q", query, queries[query], owned]).encode())
    return digest.hexdigest()[:16]


def cached_bm25_negatives(
    cache_dir: str | Path,
    corpus: Mapping[str, str],
    queries: Mapping[str, str],
    positives: Mapping[str, Sequence[str]],
    n: int,
) -> dict[str, list[str]]:
    """`mine_bm25_negatives`, read from `cache_dir/bm25-<key>.jsonl` when it was mined before."""
    path = Path(cache_dir) / f"bm25-{_key(corpus, queries, positives, n)}.jsonl"
    if path.is_file():
        with path.open(encoding="utf-8") as lines:
            rows = [json.loads(line) for line in lines]
        return {row["query_id"]: row["negatives"] for row in rows}
    mined = mine_bm25_negatives(corpus, queries, positives, n)
    rows = [
        json.dumps({"query_id": query, "negatives": docs}) + "\n" for query, docs in mined.items()
    ]
    write_atomic(path, "".join(rows), durable=False)
    log.info("mined %d BM25 negatives for %d queries into %s", n, len(mined), path)
    return mined
