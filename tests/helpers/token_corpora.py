"""Token embeddings with the shape of real ColBERT corpora, for testing approximate indexes.

ColBERT's token embeddings cluster by token (the premise of PLAID's centroids); uniformly random
tokens have no neighbourhoods, so an index's recall on them means nothing.
"""

from __future__ import annotations

import torch
from torch import Tensor


def normalise(x: Tensor) -> Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def clustered(
    n_documents: int, vocabulary: int, dim: int, lengths: tuple[int, int], n_queries: int
) -> tuple[list[str], list[Tensor], list[Tensor], list[str]]:
    """Documents of lengths[0]..lengths[1] tokens drawn around `vocabulary` directions, plus
    noise (0.05 per dimension); queries are noisy copies of chosen documents, returned with
    those documents' ids (their true best match)."""
    generator = torch.Generator().manual_seed(0)
    directions = normalise(torch.randn(vocabulary, dim, generator=generator))

    def noisy(tokens: Tensor) -> Tensor:
        return normalise(tokens + 0.05 * torch.randn(tokens.shape, generator=generator))

    sizes = torch.randint(lengths[0], lengths[1] + 1, (n_documents,), generator=generator)
    documents = [
        noisy(directions[torch.randint(0, vocabulary, (n,), generator=generator)])
        for n in sizes.tolist()
    ]
    ids = [f"doc-{i}" for i in range(n_documents)]
    chosen = torch.randperm(n_documents, generator=generator)[:n_queries].tolist()
    return ids, documents, [noisy(documents[i]) for i in chosen], [ids[i] for i in chosen]
