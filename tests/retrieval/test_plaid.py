"""PlaidIndex: residual codes round-trip, recall against exact search (with and without its exact
re-rank), pickle-free folders with memory-mapped re-rank tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import Tensor

from research.config.errors import ConfigError
from research.retrieval.configs import check_search
from research.retrieval.exact import ExactSearcher
from research.retrieval.plaid import (
    STORED,
    PlaidIndex,
    memory_mapped,
    pack,
    sample_rows,
    unpack,
)
from research.retrieval.searchers import load_searcher
from tests.helpers.token_corpora import clustered as clustered_corpus
from tests.helpers.token_corpora import normalise

DIM = 32


@pytest.fixture(scope="module")
def clustered() -> tuple[list[str], list[Tensor], list[Tensor], list[str]]:
    """1500 documents of 4-16 tokens around 256 "vocabulary" directions, 20 noisy-copy queries."""
    return clustered_corpus(1500, 256, DIM, (4, 16), 20)


def overlap(found, expected) -> float:
    hits = sum(
        len({d for d, _ in a} & {d for d, _ in e}) for a, e in zip(found, expected, strict=True)
    )
    return hits / sum(len(e) for e in expected)


@pytest.mark.parametrize("nbits", [1, 2, 4, 8])
def test_codes_unpack_to_the_buckets_packed(nbits):
    buckets = torch.randint(0, 2**nbits, (7, 16), dtype=torch.uint8)
    packed = pack(buckets, nbits)
    assert packed.shape == (7, 16 * nbits // 8) and packed.dtype == torch.uint8
    assert torch.equal(unpack(packed, nbits), buckets)


@pytest.mark.parametrize(("nbits", "least"), [(2, 0.9), (8, 0.9)])
def test_recall_at_10_against_exact_search(clustered, nbits, least):
    ids, documents, query_list, sources = clustered
    exact = ExactSearcher()
    exact.add(ids, documents)
    index = PlaidIndex(centroids=128, nbits=nbits, probes=4, candidates=128)
    index.add(ids, documents)
    found = index.search(query_list, k=10)
    assert overlap(found, exact.search(query_list, k=10)) >= least
    assert [results[0][0] for results in found] == sources
    assert index.bytes_per_token == DIM * nbits // 8 + 4  # codes + an int32 centroid id


def test_adding_in_parts_reuses_the_centroids_and_finds_the_later_documents(clustered):
    ids, documents, query_list, sources = clustered
    index = PlaidIndex(centroids=64)
    index.add(ids[:1000], documents[:1000])
    index.build()
    centroids = index._centroids.clone()
    index.add(ids[1000:], documents[1000:])
    assert torch.equal(index._centroids, centroids) and len(index) == len(ids)
    later = [
        (q, s) for q, s in zip(query_list, sources, strict=True) if int(s.split("-")[1]) >= 1000
    ]
    assert later and [index.search([q], k=1)[0][0][0] for q, _ in later] == [s for _, s in later]


@pytest.mark.slow
def test_a_build_from_blocks_equals_a_build_from_one_add(clustered, tmp_path):
    ids, documents, query_list, _ = clustered
    whole = PlaidIndex(centroids=64)
    whole.add(ids, documents)
    blocks = PlaidIndex(centroids=64)
    for start in range(0, len(ids), 200):
        blocks.add(ids[start : start + 200], documents[start : start + 200])
    assert blocks._centroids is None and not len(blocks._codes)  # add only writes tokens
    blocks.build()
    whole.build()
    for name in (*STORED, "rerank_tokens"):
        assert torch.equal(getattr(blocks, f"_{name}"), getattr(whole, f"_{name}")), name
    blocks.save(tmp_path / "plaid")
    assert loads_the_same(whole, tmp_path / "plaid", query_list)


def test_sampled_rows_are_distinct_and_as_many_as_asked():
    generator = torch.Generator().manual_seed(0)
    assert torch.equal(sample_rows(5, 9, generator), torch.arange(5))
    for n in (40, 10_000):  # drawn from a permutation, and drawn with replacement then deduplicated
        rows = sample_rows(n, 30, generator)
        assert len(rows) == len(rows.unique()) == 30 and not torch.equal(rows, rows.sort().values)
        assert int(rows.min()) >= 0 and int(rows.max()) < n


# The child reads its peak RSS from VmHWM: ru_maxrss would include pytest's own, carried over at
# fork.
BUILD_IN_BLOCKS = """
import pathlib, torch
from torch.nn import functional as F
from research.retrieval.plaid import PlaidIndex

generator = torch.Generator().manual_seed(0)
directions = F.normalize(torch.randn(512, {dim}, generator=generator), dim=1)
warm = PlaidIndex(centroids=2)  # load faiss and torch's kernels before measuring
warm.add(["w"], [directions[:16]])
warm.build()
def peak():
    return int(pathlib.Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0])
before = peak()
index = PlaidIndex(centroids=64, memory_budget_mb={budget_mb})
for b in range({blocks}):
    picked = directions[torch.randint(512, ({block},), generator=generator)]
    noise = 0.05 * torch.randn({block}, {dim}, generator=generator)
    tokens = F.normalize(picked + noise, dim=1)
    index.add([f"{{b}}-{{i}}" for i in range({block} // 20)], list(tokens.split(20)))
index.build()
grown = peak() - before
print(grown * 1024, index.num_tokens, index.bytes_per_token)
"""


def _peak_growth(dim: int, block: int, blocks: int, budget_mb: int) -> tuple[int, int, float]:
    """(peak RSS growth in bytes, tokens, the index's bytes per token) of a build in blocks, in
    a fresh process so that the peak is that build's."""
    script = BUILD_IN_BLOCKS.format(dim=dim, block=block, blocks=blocks, budget_mb=budget_mb)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    grown, n_tokens, bytes_per_token = done.stdout.split()
    return int(grown), int(n_tokens), float(bytes_per_token)


@pytest.mark.slow
def test_peak_memory_of_a_build_in_blocks_is_bounded_by_the_block_not_the_corpus():
    dim, block = 128, 20_000
    small, n_small, _ = _peak_growth(dim, block, blocks=10, budget_mb=16)
    large, n_large, bytes_per_token = _peak_growth(dim, block, blocks=40, budget_mb=16)
    assert (n_small, n_large) == (10 * block, 40 * block)
    # Each further token costs what the index keeps of it (36 bytes of codes here) and the
    # temporaries of its inverted lists: about 80 bytes, never a float copy of the token (fp16:
    # 256 bytes, fp32: 512 at D = 128). The peak itself varies by ~30 MB from run to run
    # (allocator, k-means threads), hence the margin.
    per_token = (large - small) / (n_large - n_small)
    assert bytes_per_token < dim * 2 and per_token < dim * 2, (per_token, bytes_per_token)
    assert large < n_large * dim * 4 / 2, (large, n_large)


def test_save_and_load_round_trip_without_pickle(clustered, tmp_path):
    ids, documents, query_list, _ = clustered
    index = PlaidIndex(centroids=32, nbits=4)
    index.add(ids[:300], documents[:300])
    index.save(tmp_path / "plaid")
    loaded = load_searcher(tmp_path / "plaid")
    assert isinstance(loaded, PlaidIndex) and loaded.params() == index.params()
    assert loaded.search(query_list, k=10) == index.search(query_list, k=10)
    assert sorted(f.name for f in (tmp_path / "plaid").iterdir()) == [
        "index.safetensors",
        "manifest.json",
        "tokens.safetensors",
    ]
    assert torch.equal(loaded._rerank_tokens, index._rerank_tokens)
    assert loaded._rerank_tokens.dtype == torch.float16
    assert json.loads((tmp_path / "plaid" / "manifest.json").read_text())["kind"] == "plaid"
    with safe_open(tmp_path / "plaid" / "index.safetensors", framework="pt") as tensors:
        names = set(tensors.keys())  # noqa: SIM118 - safe_open is no dict
        assert "tokens" not in names and "codes" in names


def test_exact_rerank_restores_the_recall_that_decompression_loses(clustered):
    ids, documents, query_list, _ = clustered
    truth = ExactSearcher()
    truth.add(ids, documents)
    expected = truth.search(query_list, k=10)
    index = PlaidIndex(centroids=128, nbits=1, probes=8, candidates=256)
    index.add(ids, documents)
    reranked = overlap(index.search(query_list, k=10), expected)
    index.config.rerank = 0
    decompressed = overlap(index.search(query_list, k=10), expected)
    assert reranked >= 0.97 and decompressed < 0.9, (reranked, decompressed)


def small_index(clustered, n_documents: int, **params: int) -> PlaidIndex:
    """A 32-centroid index over the first `n_documents` of the clustered corpus."""
    ids, documents, _, _ = clustered
    index = PlaidIndex(centroids=32, **params)
    index.add(ids[:n_documents], documents[:n_documents])
    return index


def loads_the_same(index: PlaidIndex, folder, query_list: list[Tensor]) -> bool:
    return load_searcher(folder).search(query_list, k=5) == index.search(query_list, k=5)


def test_without_rerank_the_index_keeps_no_tokens(clustered, tmp_path):
    index = small_index(clustered, 300, rerank=0)
    assert index._rerank_tokens is None and index.rerank_bytes_per_token == 0
    index.save(tmp_path / "plaid")
    assert not (tmp_path / "plaid" / "tokens.safetensors").exists()
    assert loads_the_same(index, tmp_path / "plaid", clustered[2])


def test_a_loaded_index_saves_over_its_own_mapped_tokens(clustered, tmp_path):
    index = small_index(clustered, 200)
    index.save(tmp_path / "plaid")
    load_searcher(tmp_path / "plaid").save(tmp_path / "plaid")
    assert loads_the_same(index, tmp_path / "plaid", clustered[2])


def test_a_reranked_index_with_missing_or_foreign_tokens_fails_in_one_line(clustered, tmp_path):
    small_index(clustered, 100).save(tmp_path / "plaid")
    save_file({"tokens": torch.zeros(3, DIM).half()}, tmp_path / "plaid" / "tokens.safetensors")
    with pytest.raises(ValueError, match="holds 3 tokens for") as err:
        load_searcher(tmp_path / "plaid")
    assert "\n" not in str(err.value)
    (tmp_path / "plaid" / "tokens.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="tokens.safetensors is missing"):
        load_searcher(tmp_path / "plaid")


def test_memory_mapped_reads_the_saved_rows_and_rejects_other_dtypes(tmp_path):
    rows = torch.randn(5, 8).half()
    save_file({"tokens": rows, "other": torch.zeros(2)}, tmp_path / "t.safetensors")
    assert torch.equal(memory_mapped(tmp_path / "t.safetensors", "tokens"), rows)
    for name in ("other", "absent"):
        with pytest.raises(ValueError, match=f"holds no float16 tensor '{name}'") as err:
            memory_mapped(tmp_path / "t.safetensors", name)
        assert "\n" not in str(err.value)


def test_embedding_sizes_that_do_not_fill_bytes_fail_in_one_line():
    index = PlaidIndex(nbits=1)
    with pytest.raises(ValueError, match="fill whole bytes, got D=4 and nbits=1") as err:
        index.add(["a"], [normalise(torch.randn(3, 4))])
    assert "\n" not in str(err.value)


def test_search_kind_plaid_is_checked_before_torch():
    check_search("model", {"kind": "plaid", "k": 10, "nbits": 4, "probes": 2, "rerank": 0})
    with pytest.raises(ConfigError, match=r"model\.search\.rerank=-1 is not valid"):
        check_search("model", {"kind": "plaid", "rerank": -1})
    with pytest.raises(ConfigError, match=r"model\.search\.nbits=3 is not valid; choose one of"):
        check_search("model", {"kind": "plaid", "nbits": 3})
