"""Teacher scores to distil from: JSON lines {"query_id", "document_ids", "scores"}."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research.data.beir.datasets import Example
from research.data.beir.sources import json_lines


def read_distillation(path: Path, queries: dict[str, str], corpus: dict[str, str]) -> list[Example]:
    """Lines {"query_id", "document_ids", "scores"}, all of one length G, in the listed order."""
    if not path.is_file():
        raise FileNotFoundError(f"distillation_file {path} not found")

    def parse(row: dict[str, Any]) -> Example:
        docs = [str(doc) for doc in row["document_ids"]]
        return str(row["query_id"]), docs, [float(score) for score in row["scores"]]

    expected = "query_id, document_ids and scores (a list of numbers)"
    rows: list[Example] = []
    for number, (query, docs, scores) in json_lines(path, parse, expected):
        first = rows[0][1] if rows else None
        problem = _problem(query, docs, scores, first, queries, corpus)
        if problem:
            raise ValueError(f"{path}:{number} {problem}")
        rows.append((query, docs, scores))
    if not rows:
        raise ValueError(f"distillation_file {path} has no lines")
    return rows


def _problem(
    query: str,
    docs: list[str],
    scores: list[float],
    first: list[str] | None,
    queries: dict[str, str],
    corpus: dict[str, str],
) -> str | None:
    """What is wrong with one distillation line, if anything (batch rows must all have G)."""
    unknown = [doc for doc in docs if doc not in corpus]
    if len(docs) != len(scores) or not docs:
        return f"has {len(docs)} document_ids but {len(scores)} scores"
    if first is not None and len(docs) != len(first):
        return f"has {len(docs)} documents but the first line has {len(first)}"
    if query not in queries:
        return f"names query {query!r}, which is not in the queries"
    if unknown:
        return f"names document {unknown[0]!r}, which is not in the corpus"
    return None
