"""An approximate ColBERT index: HNSW over every document token, exact MaxSim re-ranking.

Candidate generation follows ColBERT's end-to-end retrieval (Khattab & Zaharia 2020, "End-to-end
Top-k Retrieval with ColBERT"): each query token fetches its `candidates_per_token` nearest
document tokens, and the documents those tokens belong to are re-ranked with exact MaxSim, so
every returned score is the exact one and only recall is approximate. The token graph is
Spotify's voyager (HNSW, Malkov & Yashunin 2018), a maintained library whose wheel installs
beside the project's torch; fast-plaid would pin another torch. Tokens are compared by inner
product, the similarity MaxSim uses (on ColBERT's unit vectors it equals cosine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from voyager import Index, Space

from research.retrieval.configs import VoyagerConfig
from research.retrieval.exact import ExactSearcher, Results, require_file, require_k

GRAPH = "tokens.voy"


class VoyagerIndex(ExactSearcher):
    """HNSW token index (voyager) + exact re-ranking, storing what `ExactSearcher` stores.

    M and ef_construction shape the graph (fixed once built); ef_search is the search depth of
    each token lookup (hnswlib, which voyager builds on, searches max(ef, k) deep).
    """

    kind = "voyager"
    config: VoyagerConfig

    def __init__(self, config: VoyagerConfig | None = None, **params: Any) -> None:
        super().__init__(config, **params)
        self._graph: Index | None = None  # token id = row in the flat token matrix
        self._token_documents = torch.empty(0, dtype=torch.long)  # token id -> document row

    def add(self, document_ids: list[str], embeddings: list[Tensor]) -> None:
        first = self.num_tokens
        super().add(document_ids, embeddings)
        if self.num_tokens == first:
            return
        if self._graph is None:
            self._graph = Index(
                Space.InnerProduct,
                num_dimensions=self._tokens.shape[1],
                M=self.config.M,
                ef_construction=self.config.ef_construction,
            )
            self._graph.ef = self.config.ef_search
        new = self._tokens[first:].float().numpy()
        self._graph.add_items(new, ids=list(range(first, self.num_tokens)))
        self._token_documents = self._map_tokens()

    def search(self, queries: list[Tensor], k: int = 10) -> list[Results]:
        """The `k` best (document id, exact MaxSim score) pairs among each query's candidates."""
        k = require_k(self.kind, k)
        if not queries or self._graph is None:
            return [[] for _ in queries]
        query_tokens = self._query_tokens(queries)
        neighbours, _ = self._graph.query(
            torch.cat(query_tokens).float().numpy(),
            k=min(self.config.candidates_per_token, self.num_tokens),
        )
        documents = self._token_documents[torch.from_numpy(neighbours.astype(np.int64))]
        results = []
        for query, query_documents in zip(
            query_tokens, documents.split([len(q) for q in query_tokens]), strict=True
        ):
            scores, rows = self._top_k([query], query_documents.flatten().unique(), k)
            results.append(self._results(scores[0], rows[0]))
        return results

    def save(self, path: str | Path) -> None:
        """The exact searcher's files plus voyager's own file for the token graph."""
        folder = self._folder_to_save(path)
        self._graph.save(str(folder / GRAPH))
        super().save(folder)

    @classmethod
    def load(cls, path: str | Path) -> VoyagerIndex:
        index = super().load(path)
        graph_file = require_file(Path(path), GRAPH)
        index._graph = Index.load(str(graph_file))
        if index._graph.num_elements != index.num_tokens:
            raise ValueError(
                f"{graph_file} holds {index._graph.num_elements} tokens but the saved embeddings "
                f"hold {index.num_tokens}; save the index again"
            )
        index._graph.ef = index.config.ef_search
        index._token_documents = index._map_tokens()
        return index

    def _map_tokens(self) -> Tensor:
        """Document row of every token, from the offsets."""
        return torch.repeat_interleave(torch.arange(len(self)), self._offsets.diff())
