"""The colbert_stdlib study's free teacher: dense MiniLM scores over each training query's
positive and BM25 negatives, written in the format `data.distillation_file` reads."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from research.data.beir.distillation import read_distillation
from research.data.beir.sources import RetrievalSplit

FOLDER = Path(__file__).parents[2] / "experiments" / "colbert_stdlib"
sys.path.insert(0, str(FOLDER))  # teacher.py imports its sibling baselines.py
spec = importlib.util.spec_from_file_location("colbert_teacher", FOLDER / "teacher.py")
teacher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(teacher)

CORPUS = {
    "sort": "def sort_items(items):\n    return sorted(items)",
    "sock": "def open_socket(host, port):\n    return socket.create_connection((host, port))",
    "date": "def parse_date(text):\n    return datetime.strptime(text, '%Y-%m-%d')",
    "read": "def read_lines(path):\n    with open(path) as f:\n        return f.readlines()",
    "json": "def load_json(path):\n    with open(path) as f:\n        return json.load(f)",
}
QUERIES = {
    "sort": "Return the items sorted.",
    "sock": "Open a socket to the host and port.",
    "date": "Parse a date from text.",
    "read": "Read the lines of a file.",
    "json": "Load a JSON file.",
}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    split = RetrievalSplit(dict(CORPUS), dict(QUERIES), {q: {q: 1} for q in QUERIES})
    return teacher.teacher_rows(split, negatives=2, scale=20.0, query_length=32, doc_length=64)


def test_rows_list_the_positive_first_then_distinct_negatives(rows: list[dict]):
    assert sorted(row["query_id"] for row in rows) == sorted(QUERIES)
    for row in rows:
        documents = row["document_ids"]
        assert documents[0] == row["query_id"] and len(set(documents)) == 3
        assert all(-20.0 <= score <= 20.0 for score in row["scores"])  # scale x cosine
    # the zero-shot teacher knows these easy pairs: the positive scores highest for most
    assert sum(max(row["scores"]) == row["scores"][0] for row in rows) >= 4


def test_the_distillation_loader_reads_what_it_writes(rows: list[dict], tmp_path: Path):
    path = tmp_path / "teacher.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    examples = read_distillation(path, QUERIES, CORPUS)
    assert [(q, docs) for q, docs, _ in examples] == [
        (row["query_id"], row["document_ids"]) for row in rows
    ]
    assert [scores for _, _, scores in examples] == [row["scores"] for row in rows]  # JSON: exact
