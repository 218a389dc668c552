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
from typing import Any, Literal

from research.config.schema import MAX_SEED, Schema, check_node, fail, spec

AUTO = "auto"
# The PLAID parameters that may be "auto", and the least integer each accepts (rerank 0: none).
AUTO_SIZED = {"centroids": 1, "candidates": 1, "rerank": 0}


@dataclass
class ExactSearchConfig(Schema):
    """Brute-force MaxSim; the similarities of one block of documents against the queries take
    at most `memory_budget_mb` MiB (one query of 32 tokens: 256 MiB holds 2M document tokens)."""

    targets = ("research.retrieval.exact.ExactSearcher",)
    memory_budget_mb: float = spec(256.0, gt=0)
    """Cap in MiB on one block's token similarities against the queries (larger: fewer blocks)."""


@dataclass
class VoyagerConfig(ExactSearchConfig):
    """HNSW over document tokens (M and ef_construction shape the graph, ef_search is each
    lookup's depth), then exact re-ranking of the documents of each query token's
    `candidates_per_token` nearest tokens."""

    targets = ("research.retrieval.voyager.VoyagerIndex",)
    M: int = spec(16, ge=2)
    """HNSW links per token: more raise recall, memory and build time (fixed once built)."""
    ef_construction: int = spec(200, ge=1)
    """HNSW search depth while building: higher gives a better graph, built more slowly."""
    ef_search: int = spec(64, ge=1)
    """HNSW search depth of each token lookup (at least candidates_per_token is searched)."""
    candidates_per_token: int = spec(32, ge=1)
    """Nearest document tokens fetched per query token; their documents are re-ranked exactly."""


@dataclass
class PlaidConfig(ExactSearchConfig):
    """PLAID-class compressed index (Santhanam et al. 2022): k-means `centroids` (faiss), each
    token stored as its centroid id + its residual at `nbits` per dimension; a query probes each
    token's `probes` nearest centroids, ranks the documents found there by centroid-only MaxSim,
    decompresses the best `candidates` and ranks them with MaxSim, then re-ranks the best
    `rerank` of those exactly on fp16 tokens the index keeps (2 x D bytes per token, memory-mapped
    on load; 0: keep no tokens and return the decompressed ranking). Building costs about
    n_tokens x centroids x D multiply-adds (the assignment); it encodes the documents in blocks
    whose working memory is about `memory_budget_mb`, so its memory beyond the compact codes
    does not grow with the corpus.

    `centroids`, `candidates` and `rerank` are "auto" by default: sized from the corpus as
    research.retrieval.plaid_auto says (centroids from the tokens added before the first build,
    candidates and rerank from the documents at search time: 1024 / 2048 / 64 at 10k documents,
    4096 / 8192 / 256 at 100k); an integer wins."""

    targets = ("research.retrieval.plaid.PlaidIndex",)
    centroids: int | Literal["auto"] = AUTO
    """k-means centroids, learnt by the first build; "auto": sized from the tokens added."""
    nbits: int = spec(2, choices=[1, 2, 4, 8])
    """Bits per residual dimension: more give a closer approximation and a larger index."""
    probes: int = spec(16, ge=1)
    """Nearest centroids each query token probes for candidate documents (more: more found)."""
    candidates: int | Literal["auto"] = AUTO
    """Documents decompressed and ranked by MaxSim per query; "auto": from the documents held."""
    rerank: int | Literal["auto"] = AUTO
    """Best candidates re-ranked exactly on fp16 tokens the index keeps; 0: keep no tokens and
    return the decompressed ranking. "auto": sized from the documents held."""
    kmeans_iterations: int = spec(10, ge=1)
    """k-means iterations when learning the centroids."""
    kmeans_points_per_centroid: int = spec(64, ge=1, id_if_changed=True)
    """Tokens sampled per centroid, from every token added, to train the k-means and the
    residual buckets (64: 262k tokens for 4096 centroids); the rest are only assigned."""
    seed: int = spec(0, ge=0, le=MAX_SEED)
    """Seeds the k-means (its token sample and initialisation) and the residual sample."""

    def check(self, at: str) -> None:
        """Each of AUTO_SIZED is "auto" or an integer >= its least (bools are no integers)."""
        for key, least in AUTO_SIZED.items():
            value = getattr(self, key)
            if value == AUTO or (type(value) is int and value >= least):
                continue
            fail(at, key, f"={value!r} is not valid; it must be 'auto' or an integer >= {least}")


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
