"""The parameters of every searcher here, declared once and torch-free, and the check of a
`search` option (which searcher, how deep, and that searcher's own parameters).

Each dataclass is both what the CLI checks before torch loads and what the searcher's
constructor takes (`VoyagerIndex(config)` or `VoyagerIndex(M=32)`); `SEARCH_CONFIGS` maps each
kind, as a `search.kind` value or a saved manifest names it, to its declaration, whose
`targets[0]` is the class that implements it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from research.config.schema import Schema, check_node, fail, spec


@dataclass
class ExactSearchConfig(Schema):
    """Brute-force MaxSim; the similarities of one block of documents against the queries take
    at most `memory_budget_mb` MiB (one query of 32 tokens: 256 MiB holds 2M document tokens)."""

    targets = ("research.retrieval.exact.ExactSearcher",)
    memory_budget_mb: float = spec(256.0, gt=0)


@dataclass
class VoyagerConfig(ExactSearchConfig):
    """HNSW over document tokens (M and ef_construction shape the graph, ef_search is each
    lookup's depth), then exact re-ranking of the documents of each query token's
    `candidates_per_token` nearest tokens."""

    targets = ("research.retrieval.voyager.VoyagerIndex",)
    M: int = spec(16, ge=2)
    ef_construction: int = spec(200, ge=1)
    ef_search: int = spec(64, ge=1)
    candidates_per_token: int = spec(32, ge=1)


@dataclass
class PlaidConfig(ExactSearchConfig):
    """PLAID-class compressed index (Santhanam et al. 2022): k-means `centroids` (faiss), each
    token stored as its centroid id + its residual at `nbits` per dimension; a query probes each
    token's `probes` nearest centroids, ranks the documents found there by centroid-only MaxSim,
    decompresses the best `candidates` and ranks them with MaxSim, then re-ranks the best
    `rerank` of those exactly on fp16 tokens the index keeps (2 x D bytes per token, memory-mapped
    on load; 0: keep no tokens and return the decompressed ranking). Building costs about
    n_tokens x centroids x D multiply-adds (the assignment)."""

    targets = ("research.retrieval.plaid.PlaidIndex",)
    centroids: int = spec(1024, ge=1)
    nbits: int = spec(2, choices=[1, 2, 4, 8])
    probes: int = spec(16, ge=1)
    candidates: int = spec(2048, ge=1)
    rerank: int = spec(64, ge=0)
    kmeans_iterations: int = spec(10, ge=1)
    seed: int = spec(0, ge=0)


SEARCH_CONFIGS: dict[str, type[ExactSearchConfig]] = {
    "exact": ExactSearchConfig,
    "voyager": VoyagerConfig,
    "plaid": PlaidConfig,
}


def search_params(kind: str) -> list[str]:
    """The constructor parameters of searcher `kind`, in declaration order."""
    return [field.name for field in dataclasses.fields(SEARCH_CONFIGS[kind])]


def check_search(at: str, search: dict[str, Any]) -> None:
    """Check a `search` option: `kind` (default exact), `k` (the ranking's depth, a positive
    integer) and the kind's own parameters. `at` is the path of the node that holds `search`
    (e.g. "model"); an error is one line naming `<at>.search.<key>`."""
    kind = search.get("kind", "exact")
    if kind not in SEARCH_CONFIGS:
        listed = ", ".join(SEARCH_CONFIGS)
        fail(at, "search.kind", f"={kind!r} is not valid; choose one of: {listed}")
    valid = ["kind", "k", *search_params(kind)]
    unknown = sorted(set(search) - set(valid))
    if unknown:
        fail(at, f"search.{unknown[0]}", f"is not a parameter of {kind}; valid: {', '.join(valid)}")
    k = search.get("k", 1)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        fail(at, "search.k", f"={k!r} must be a positive integer")
    own = {key: value for key, value in search.items() if key not in ("kind", "k")}
    check_node(f"{at}.search" if at else "search", own, SEARCH_CONFIGS[kind])
