"""In-batch contrastive loss over MaxSim scores, with the semantics of PyLate's `Contrastive`.

Each query is scored against every document of the batch (its positive, its hard negatives and
all other queries' documents) and cross-entropy picks its positive: the loss PyLate
(lightonai/pylate, `pylate/losses/contrastive.py`) and ColBERTv2 train with. Documents arrive
grouped per query: `documents[i*G : (i+1)*G]` belong to query i and `documents[i*G]` is its
positive, so the target of query i is column i*G.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.distributed.nn.functional import all_gather
from torch.nn import functional as F

from research.losses.configs import ContrastiveConfig
from research.retrieval.maxsim import maxsim_matrix


class Contrastive(nn.Module):
    """Cross-entropy of MaxSim scores / temperature over all documents of the (global) batch.

    Under torch.distributed (initialised, world_size > 1, `gather_across_devices`) every rank's
    documents join the candidates through a differentiable all-gather: rank r's loss sends
    gradient to the documents of every rank, so after DDP averages the gradients the update is
    that of one process computing the loss on the concatenated batch. Ranks may hold documents
    of different lengths and counts; they are padded for the gather and the padding masked out.
    PyLate multiplies the gathered loss by the world size; we do not, so a learning rate tuned
    on one device means the same on several.
    """

    def __init__(self, config: ContrastiveConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = c = ContrastiveConfig.build(config, params)
        self.temperature = c.temperature
        self.size_average = c.size_average
        self.gather_across_devices = c.gather_across_devices

    def forward(
        self, queries: Tensor, query_mask: Tensor, documents: Tensor, document_mask: Tensor
    ) -> Tensor:
        group_size = documents_per_query(queries, documents)
        first = 0
        if self.gather_across_devices and _world_size() > 1:
            documents, document_mask, first = _gather_documents(documents, document_mask)
        scores = maxsim_matrix(queries, query_mask, documents, document_mask) / self.temperature
        targets = first + group_size * torch.arange(len(queries), device=scores.device)
        return F.cross_entropy(scores, targets, reduction="mean" if self.size_average else "sum")

    def extra_repr(self) -> str:
        return (
            f"temperature={self.temperature}, size_average={self.size_average}, "
            f"gather_across_devices={self.gather_across_devices}"
        )


def documents_per_query(queries: Tensor, documents: Tensor) -> int:
    """G, the size of each query's document group (1 positive + hard negatives)."""
    if len(queries) == 0 or len(documents) % len(queries) != 0:
        raise ValueError(
            f"documents must come in equal groups per query (B queries -> B*G documents), got "
            f"{len(queries)} queries and {len(documents)} documents"
        )
    return len(documents) // len(queries)


def _world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _gather_documents(documents: Tensor, document_mask: Tensor) -> tuple[Tensor, Tensor, int]:
    """All ranks' documents and masks in rank order, and the index of this rank's first one."""
    shape = torch.tensor(documents.shape[:2], device=documents.device)
    shapes = [torch.empty_like(shape) for _ in range(dist.get_world_size())]
    dist.all_gather(shapes, shape)
    counts = [int(s[0]) for s in shapes]
    most, longest = max(counts), max(int(s[1]) for s in shapes)
    grow = (0, longest - documents.shape[1], 0, most - len(documents))
    padded = F.pad(documents, (0, 0, *grow))
    padded_mask = F.pad(document_mask.to(torch.uint8), grow)
    masks = [torch.empty_like(padded_mask) for _ in counts]
    dist.all_gather(masks, padded_mask)
    gathered = all_gather(padded)  # differentiable: backward sums every rank's gradient
    documents = torch.cat([g[:n] for g, n in zip(gathered, counts, strict=True)])
    document_mask = torch.cat([m[:n] for m, n in zip(masks, counts, strict=True)]).bool()
    return documents, document_mask, sum(counts[: dist.get_rank()])
