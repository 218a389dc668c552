"""The torch datasets a retrieval datamodule hands out, and the collate that batches them."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

# (query id, its G document ids in batch order, teacher scores or None)
Example = tuple[str, list[str], list[float] | None]


class TrainExamples(Dataset):
    """(query, its G documents[, teacher scores]) per example; texts looked up, never copied."""

    def __init__(
        self, queries: dict[str, str], corpus: dict[str, str], examples: list[Example]
    ) -> None:
        self.queries, self.corpus, self.examples = queries, corpus, examples

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> dict[str, Any]:
        query, docs, scores = self.examples[index]
        item: dict[str, Any] = {
            "queries": self.queries[query],
            "documents": [self.corpus[doc] for doc in docs],
        }
        if scores is not None:
            item["teacher_scores"] = scores
        return item


class EvalQueries(Dataset):
    """(query id, query text) per item: evaluation searches the corpus itself."""

    def __init__(self, queries: dict[str, str]) -> None:
        self.items = list(queries.items())

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, str]:
        query, text = self.items[index]
        return {"query_ids": query, "queries": text}


def collate(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Strings stay lists; documents are flattened query by query (B*G); scores become [B, G]."""
    batch: dict[str, Any] = {}
    for key in items[0]:
        values = [item[key] for item in items]
        if key == "documents":
            batch[key] = [doc for docs in values for doc in docs]
        elif key == "teacher_scores":
            batch[key] = torch.tensor(values, dtype=torch.float32)
        else:
            batch[key] = values
    return batch
