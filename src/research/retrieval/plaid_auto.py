"""The PLAID index's `auto` sizes: centroids from the tokens indexed, candidates and rerank from
the documents searched, scaled from the settings measured on this project's benchmark.

Measured (docs/pages/benchmarks.md; benchmarks/colbert_index.py, nbits 2, probes 16): 1024
centroids, 2048 candidates and rerank 64 reach recall@10 0.969 against exact search at 10k documents
(0.4M tokens), but 0.806 at 100k (4M tokens), where 4096 / 8192 / 256 reach 0.968 (build 275 s).
Both sizes grow here as the square root of the corpus, rounded to the nearest power of two,
which gives exactly those two settings: 1024 x sqrt(10) = 3238 -> 4096 centroids and
2048 x sqrt(10) = 6476 -> 8192 candidates; rerank stays candidates / 32 (64 -> 256). So the
sizes double per 4x corpus: 1024 centroids for 0.2-0.8M tokens, 2048 to 3.2M, 4096 to 12.8M;
2048 candidates up to 20k documents, 4096 to 80k, 8192 to 320k.
colbert-ai's rule, 2^floor(log2(16 x sqrt(n_tokens))) centroids, also grows as the square root
but is 8x larger (8192 at 0.4M tokens): its build would cost 8x ours (the assignment is
n_tokens x centroids x D multiply-adds), and 1024 already met the target there. Below 10k
documents candidates and rerank stay at the measured 2048 / 64 (cheap there, and fewer was not
shown to be enough); beyond 100k documents the rule extrapolates, unmeasured.
"""

from __future__ import annotations

import math

# The measured point the sizes scale from: 10k documents of 0.4M tokens.
MEASURED_TOKENS = 400_000
MEASURED_DOCUMENTS = 10_000
MEASURED_CENTROIDS = 1024
MEASURED_CANDIDATES = 2048
# rerank = candidates / RERANK_SHARE (2048 -> 64 and 8192 -> 256 were measured).
RERANK_SHARE = 32
# A bound on the build: assigning n tokens costs n x centroids x D multiply-adds. The rule
# reaches it only past ~800M tokens.
MAX_CENTROIDS = 65536


def scaled(measured: int, size: int, measured_size: int) -> int:
    """`measured` x sqrt(size / measured_size) rounded to the nearest power of two on a log
    scale (2^round(log2(.))); `size` > 0."""
    return 2 ** round(math.log2(measured * math.sqrt(size / measured_size)))


def auto_centroids(n_tokens: int) -> int:
    """Centroids for an index built from `n_tokens` tokens: 1024 at 0.4M, 4096 at 4M, never
    more than the tokens nor MAX_CENTROIDS."""
    if n_tokens < 1:
        raise ValueError(f"auto centroids need at least one token, got {n_tokens}")
    rule = scaled(MEASURED_CENTROIDS, n_tokens, MEASURED_TOKENS)
    return min(rule, MAX_CENTROIDS, n_tokens)


def auto_candidates(n_documents: int) -> int:
    """Documents decompressed per query: 2048 up to 10k documents, 8192 at 100k."""
    if n_documents <= MEASURED_DOCUMENTS:
        return MEASURED_CANDIDATES
    return scaled(MEASURED_CANDIDATES, n_documents, MEASURED_DOCUMENTS)


def auto_rerank(n_documents: int) -> int:
    """Documents re-ranked exactly per query: 64 up to 10k documents, 256 at 100k."""
    return auto_candidates(n_documents) // RERANK_SHARE
