"""PLAID's "auto" sizes: the rule's values at the measured corpus sizes, an explicit integer
winning, the sizes used kept in the saved manifest, and one-line errors for invalid sizes."""

from __future__ import annotations

import json
import logging

import pytest

from research.config.errors import ConfigError
from research.retrieval.configs import check_search
from research.retrieval.plaid import PlaidIndex
from research.retrieval.plaid_auto import (
    MAX_CENTROIDS,
    auto_candidates,
    auto_centroids,
    auto_rerank,
)
from research.retrieval.searchers import load_searcher
from tests.helpers.token_corpora import clustered

DIM = 32


@pytest.fixture(scope="module")
def corpus():
    """300 documents of 4-16 tokens (about 3k tokens), 5 queries."""
    return clustered(300, 64, DIM, (4, 16), 5)


def built(corpus, **params) -> PlaidIndex:
    ids, documents, _, _ = corpus
    index = PlaidIndex(**params)
    index.add(ids, documents)
    index.build()
    return index


@pytest.mark.parametrize(
    ("documents", "tokens", "sizes"),
    [(10_000, 400_000, (1024, 2048, 64)), (100_000, 4_000_000, (4096, 8192, 256))],
)
def test_auto_gives_the_settings_measured_at_10k_and_100k_documents(documents, tokens, sizes):
    assert (auto_centroids(tokens), auto_candidates(documents), auto_rerank(documents)) == sizes


def test_auto_sizes_stay_within_the_corpus_and_bounds():
    assert all(auto_centroids(n) <= n for n in range(1, 2000))
    assert auto_centroids(1) == 1 and auto_centroids(10**10) == MAX_CENTROIDS
    # Below 10k documents candidates and rerank keep the measured 2048 / 64.
    assert {(auto_candidates(n), auto_rerank(n)) for n in (0, 1, 500, 9_999)} == {(2048, 64)}
    with pytest.raises(ValueError, match="at least one token, got 0"):
        auto_centroids(0)


def test_a_default_index_resolves_auto_from_its_corpus(corpus, caplog):
    with caplog.at_level(logging.INFO, logger="research.retrieval.plaid"):
        index = built(corpus)
        index.search(corpus[2], k=5)
        index.search(corpus[2], k=5)
    tokens = index.num_tokens
    assert index.params()["centroids"] == "auto"
    assert index.resolved == {"centroids": auto_centroids(tokens), "candidates": 2048, "rerank": 64}
    assert index.resolved["centroids"] < tokens and len(index._centroids) == auto_centroids(tokens)
    (record,) = caplog.records  # logged once: at the build, not again at each search
    assert f"centroids {auto_centroids(tokens)} (auto), candidates 2048 (auto)" in record.message
    assert [results[0][0] for results in index.search(corpus[2], k=1)] == corpus[3]
    assert "using centroids=" in repr(index)


def test_an_explicit_integer_wins_over_auto(corpus):
    index = built(corpus, centroids=16, candidates=100, rerank=8)
    assert index.resolved == {"centroids": 16, "candidates": 100, "rerank": 8}
    assert len(index._centroids) == 16


def test_the_sizes_used_are_saved_in_the_manifest_and_survive_loading(corpus, tmp_path):
    index = built(corpus, candidates=300)
    index.save(tmp_path / "plaid")
    manifest = json.loads((tmp_path / "plaid" / "manifest.json").read_text())
    assert manifest["params"]["centroids"] == "auto" and manifest["params"]["candidates"] == 300
    expected = {"centroids": auto_centroids(index.num_tokens), "candidates": 300, "rerank": 64}
    assert manifest["resolved"] == index.resolved == expected
    loaded = load_searcher(tmp_path / "plaid")
    assert loaded.resolved == index.resolved and loaded.params() == index.params()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("centroids", 0, "=0 is not valid; it must be 'auto' or an integer >= 1"),
        ("candidates", -1, "=-1 is not valid; it must be 'auto' or an integer >= 1"),
        ("rerank", -1, "=-1 is not valid; it must be 'auto' or an integer >= 0"),
        ("centroids", "big", "='big' must be int or 'auto'"),
        ("rerank", 1.5, "=1.5 must be int or 'auto'"),
        ("candidates", True, "=True must be int or 'auto'"),
    ],
)
def test_an_invalid_size_is_a_one_line_error_naming_the_key(key, value, message):
    with pytest.raises(ConfigError) as err:
        check_search("model", {"kind": "plaid", key: value})
    assert str(err.value) == f"model.search.{key}{message}"
    with pytest.raises(ConfigError, match=f"Plaid.{key}"):
        PlaidIndex(**{key: value})


def test_auto_and_integers_pass_the_config_check():
    check_search("model", {"kind": "plaid", "centroids": "auto", "candidates": 64, "rerank": 0})
