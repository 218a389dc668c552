"""ExactSearcher equals a loop over documents; searchers save without pickle and fail clearly."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open
from torch import Tensor

from research.config.errors import ConfigError
from research.retrieval.exact import ExactSearcher
from research.retrieval.searchers import build_searcher, load_searcher

DIM = 16


def unit(generator: torch.Generator, *shape: int) -> Tensor:
    """Random unit-norm rows."""
    x = torch.randn(*shape, generator=generator)
    return x / x.norm(dim=-1, keepdim=True)


def corpus(n: int, seed: int, max_length: int = 12) -> tuple[list[str], list[Tensor]]:
    """`n` documents of 1..max_length tokens: a one-token document often has only negative
    similarities, so padding scored as 0 would wrongly win its max."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_length + 1, (n,), generator=generator).tolist()
    return [f"doc-{i}" for i in range(n)], [unit(generator, length, DIM) for length in lengths]


def queries(n: int, seed: int) -> list[Tensor]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 9, (n,), generator=generator).tolist()
    return [unit(generator, length, DIM) for length in lengths]


def loop_search(
    query_list: list[Tensor], ids: list[str], documents: list[Tensor], k: int
) -> list[list[tuple[str, float]]]:
    """The definition of MaxSim, one (query, document) pair at a time, in float64."""
    results = []
    for query in query_list:
        scored = [
            (doc_id, float((query.double() @ doc.double().T).max(dim=1).values.sum()))
            for doc_id, doc in zip(ids, documents, strict=True)
        ]
        results.append(sorted(scored, key=lambda pair: -pair[1])[:k])
    return results


def assert_same_results(got, expected) -> None:
    assert len(got) == len(expected)
    for got_one, expected_one in zip(got, expected, strict=True):
        assert [doc_id for doc_id, _ in got_one] == [doc_id for doc_id, _ in expected_one]
        assert [s for _, s in got_one] == pytest.approx([s for _, s in expected_one], abs=1e-5)
        assert all(a >= b for (_, a), (_, b) in zip(got_one, got_one[1:], strict=False))


# 1e-5 MiB holds fewer similarities than one document has: one document per block.
@pytest.mark.parametrize("memory_budget_mb", [1e-5, 0.002, 0.01, 256])
def test_exact_search_equals_a_loop_over_documents(memory_budget_mb):
    ids, documents = corpus(64, seed=0)
    searcher = ExactSearcher(memory_budget_mb=memory_budget_mb)
    searcher.add(ids, documents)
    query_list = queries(5, seed=1)
    assert_same_results(
        searcher.search(query_list, k=10), loop_search(query_list, ids, documents, k=10)
    )


def test_k_larger_than_the_corpus_returns_the_whole_corpus_sorted():
    ids, documents = corpus(9, seed=2)
    searcher = ExactSearcher(memory_budget_mb=0.001)
    searcher.add(ids, documents)
    query_list = queries(3, seed=3)
    results = searcher.search(query_list, k=50)
    assert all(sorted(doc_id for doc_id, _ in one) == sorted(ids) for one in results)
    assert_same_results(results, loop_search(query_list, ids, documents, k=9))


def test_adding_in_several_calls_equals_adding_at_once():
    ids, documents = corpus(30, seed=4)
    at_once, in_parts = ExactSearcher(memory_budget_mb=0.001), ExactSearcher(memory_budget_mb=0.001)
    at_once.add(ids, documents)
    for start, end in ((0, 11), (11, 12), (12, 30)):
        in_parts.add(ids[start:end], documents[start:end])
    query_list = queries(4, seed=5)
    assert len(in_parts) == 30
    assert in_parts.search(query_list, k=7) == at_once.search(query_list, k=7)


def test_an_empty_searcher_finds_nothing_and_refuses_to_save(tmp_path):
    searcher = ExactSearcher()
    assert searcher.search(queries(2, seed=6), k=3) == [[], []]
    with pytest.raises(ValueError, match="empty: add documents") as err:
        searcher.save(tmp_path / "index")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("ids", "embeddings", "message"),
    [
        (["a", "b"], [torch.zeros(2, DIM)], "2 document ids but 1 embeddings"),
        (["a", "b", "a"], [torch.zeros(2, DIM)] * 3, "document id 'a', which it already holds"),
        (["first"], [torch.zeros(2, DIM)], "document id 'first', which it already holds"),
        (["a", "b"], [torch.zeros(2, DIM), torch.zeros(2, DIM - 1)], r"got \(2, 15\)"),
        (["a"], [torch.zeros(2, DIM + 1)], r"shape \[n_tokens, 16\], got \(2, 17\)"),
        (["a"], [torch.zeros(DIM)], r"shape \[n_tokens, 16\], got \(16,\)"),
    ],
)
def test_add_rejects_bad_input_in_one_line(ids, embeddings, message):
    searcher = ExactSearcher()
    searcher.add(["first"], [torch.zeros(3, DIM)])
    with pytest.raises(ValueError, match=message) as err:
        searcher.add(ids, embeddings)
    assert "\n" not in str(err.value)


def test_search_rejects_a_query_of_another_dimension_and_k_below_one():
    searcher = ExactSearcher()
    searcher.add(*corpus(3, seed=7))
    with pytest.raises(ValueError, match="query embeddings of shape"):
        searcher.search([torch.zeros(4, DIM + 2)])
    with pytest.raises(ValueError, match="k must be an integer >= 1, got 0"):
        searcher.search(queries(1, seed=8), k=0)


def test_save_and_load_round_trip_without_pickle(tmp_path):
    ids, documents = corpus(40, seed=9)
    searcher = ExactSearcher(memory_budget_mb=16)
    searcher.add(ids, documents)
    searcher.save(tmp_path / "exact")
    loaded = load_searcher(tmp_path / "exact")
    assert isinstance(loaded, ExactSearcher) and loaded.config.memory_budget_mb == 16
    query_list = queries(4, seed=10)
    assert loaded.search(query_list, k=10) == searcher.search(query_list, k=10)
    assert ExactSearcher.load(tmp_path / "exact").search(query_list, k=3) == searcher.search(
        query_list, k=3
    )
    assert_no_pickle(tmp_path / "exact")


def assert_no_pickle(folder, extra: tuple[str, ...] = ()) -> None:
    """The folder holds only the JSON manifest, the safetensors file and `extra`, each of which
    opens with its own (pickle-free) reader."""
    assert sorted(f.name for f in folder.iterdir()) == sorted(
        ("embeddings.safetensors", "manifest.json", *extra)
    )
    assert json.loads((folder / "manifest.json").read_text())["document_ids"]
    with safe_open(folder / "embeddings.safetensors", framework="pt") as tensors:
        assert sorted(tensors.keys()) == ["offsets", "tokens"]


def test_loading_a_folder_that_is_not_an_index_names_path_and_kinds(tmp_path):
    (tmp_path / "notes.txt").write_text("not an index")
    with pytest.raises(FileNotFoundError) as err:
        load_searcher(tmp_path)
    message = str(err.value)
    assert str(tmp_path) in message and "exact, voyager" in message and "\n" not in message


def test_loading_an_unknown_kind_names_path_and_kinds(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "faiss", "params": {}}))
    with pytest.raises(
        ValueError, match="unknown kind 'faiss'; valid kinds: exact, voyager, "
    ) as e:
        load_searcher(tmp_path)
    assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)


def test_build_searcher_makes_each_kind_and_names_the_valid_ones():
    assert isinstance(build_searcher("exact", memory_budget_mb=5), ExactSearcher)
    assert build_searcher("voyager").kind == "voyager"
    with pytest.raises(ValueError, match="unknown searcher kind 'faiss'; valid kinds: exact, "):
        build_searcher("faiss")


@pytest.mark.parametrize(
    ("kind", "params", "message"),
    [
        (
            "exact",
            {"memory_budget_mb": 0},
            "ExactSearch.memory_budget_mb=0.0 is out of range; it must be > 0",
        ),
        ("exact", {"memory_budget_mb": "x"}, "ExactSearch.memory_budget_mb='x' must be float"),
        (
            "exact",
            {"budget": 8},
            "budget is not an option of .*; valid options: memory_budget_mb",
        ),
        ("voyager", {"candidates_per_token": 0}, "Voyager.candidates_per_token=0 is out of range"),
        ("voyager", {"M": 1}, "Voyager.M=1 is out of range; it must be >= 2"),
        ("voyager", {"ef_search": -3}, "Voyager.ef_search=-3 is out of range; it must be >= 1"),
        ("voyager", {"ef_construction": True}, "Voyager.ef_construction=True must be int"),
    ],
)
def test_build_searcher_rejects_bad_parameters_in_one_line(kind, params, message):
    with pytest.raises(ConfigError, match=message) as err:
        build_searcher(kind, **params)
    assert "\n" not in str(err.value)
