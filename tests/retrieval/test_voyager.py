"""VoyagerIndex: HNSW candidates, exact MaxSim re-ranking, voyager's own file on disk."""

from __future__ import annotations

import pytest
from voyager import Index

from research.retrieval.exact import ExactSearcher
from research.retrieval.searchers import load_searcher
from research.retrieval.voyager import VoyagerIndex
from tests.helpers.token_corpora import clustered as clustered_corpus
from tests.retrieval.test_exact import (
    assert_no_pickle,
    assert_same_results,
    corpus,
    loop_search,
    queries,
)


@pytest.fixture(scope="module")
def clustered():
    """2000 documents of 4-12 tokens around 1024 "vocabulary" directions (D=32), and 30
    queries that are noisy copies of chosen documents' tokens."""
    ids, documents, query_list, sources = clustered_corpus(2000, 1024, 32, (4, 12), 30)
    index = VoyagerIndex(ef_construction=100)
    index.add(ids, documents)
    exact = ExactSearcher()
    exact.add(ids, documents)
    return index, exact, query_list, sources


def test_voyager_top10_agrees_with_exact_search(clustered):
    index, exact, query_list, sources = clustered
    approximate, expected = index.search(query_list, k=10), exact.search(query_list, k=10)
    agreement = sum(
        len({doc for doc, _ in a} & {doc for doc, _ in e})
        for a, e in zip(approximate, expected, strict=True)
    ) / (10 * len(query_list))
    assert agreement >= 0.9
    assert [results[0][0] for results in approximate] == sources


def test_voyager_scores_are_the_exact_maxsim_scores(clustered):
    index, exact, query_list, _ = clustered
    everything = exact.search(query_list, k=len(exact))
    for results, reference in zip(index.search(query_list, k=10), everything, strict=True):
        exact_scores = dict(reference)
        assert [score for _, score in results] == pytest.approx(
            [exact_scores[doc] for doc, _ in results], abs=1e-5
        )  # one block or a gathered few: float32 sums in another order


def test_with_every_token_a_candidate_it_is_exact_search_even_when_added_in_parts():
    ids, documents = corpus(50, seed=11)
    index = VoyagerIndex(candidates_per_token=10_000, memory_budget_mb=0.001)
    index.add(ids[:20], documents[:20])
    index.add(ids[20:], documents[20:])
    query_list = queries(6, seed=12)
    assert_same_results(index.search(query_list, k=10), loop_search(query_list, ids, documents, 10))


def test_save_and_load_round_trip_gives_identical_results(tmp_path):
    ids, documents = corpus(300, seed=14)
    index = VoyagerIndex(M=8, ef_search=8, candidates_per_token=4, memory_budget_mb=0.01)
    index.add(ids, documents)
    index.save(tmp_path / "voyager")
    loaded = load_searcher(tmp_path / "voyager")
    assert isinstance(loaded, VoyagerIndex) and loaded.params() == index.params()
    query_list = queries(8, seed=15)
    assert loaded.search(query_list, k=10) == index.search(query_list, k=10)
    assert_no_pickle(tmp_path / "voyager", extra=("tokens.voy",))
    assert len(Index.load(str(tmp_path / "voyager" / "tokens.voy"))) == index.num_tokens


def test_loading_needs_the_matching_kind_and_the_graph_file(tmp_path):
    index = VoyagerIndex()
    index.add(*corpus(5, seed=13))
    index.save(tmp_path / "voyager")
    with pytest.raises(ValueError, match="holds a 'voyager' index, not 'exact'; load it with"):
        ExactSearcher.load(tmp_path / "voyager")
    (tmp_path / "voyager" / "tokens.voy").unlink()
    with pytest.raises(
        FileNotFoundError, match="incomplete searcher folder: tokens.voy is missing"
    ):
        VoyagerIndex.load(tmp_path / "voyager")
