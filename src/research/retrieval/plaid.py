"""A PLAID-class compressed ColBERT index: centroids + 1-8 bit residuals, about 14x smaller
than fp32 tokens at nbits=2 and D=128 (32 bytes of codes + a 4-byte centroid id per token),
with an optional exact re-ranking of its best documents from fp16 tokens kept on disk.

The method is ColBERTv2's residual compression (Santhanam et al. 2022, "ColBERTv2") with
PLAID's search (Santhanam et al. 2022, "PLAID: An Efficient Engine for Late Interaction
Retrieval"): every token is stored as its nearest k-means centroid plus its residual quantised
per dimension into 2^nbits buckets (cutoffs at the quantiles of the residual values, each bucket
decoded as its median). A query (1) scores its tokens against the centroids, (2) takes the
documents that have a token in one of each query token's `probes` best centroids, (3) ranks them
by MaxSim with every document token replaced by its centroid, counting only probed centroids
(read from the inverted lists, so its cost grows with the probed lists, not the corpus),
(4) decompresses the best `candidates` and ranks them by MaxSim on the decompressed tokens, and
(5) when `rerank` > 0, re-scores the best `rerank` of those with MaxSim on the documents' fp16
tokens, which the index keeps beside its codes (memory-mapped when loaded, so only the pages of
re-ranked documents are read). Stage 5 exists because the benchmark's near-tied scores (the 10th
and 11th best documents differ by ~0.1% of the score at 10k documents) are below decompression's
error: decompressed ranking alone reached recall@10 0.70 (nbits=2) and 0.87 (nbits=4) against
exact search even given exact search's own top 100 as candidates (docs/pages/benchmarks.md).
`centroids`, `candidates` and `rerank` default to "auto", sized from the corpus by plaid_auto.py
(centroids when the first `add` builds the index, the others at search time); `resolved` says
what ran, and the manifest keeps it.
k-means is faiss's (`faiss.Kmeans`, a maintained library installed from wheels beside torch:
fast-plaid pins torch 2.11). Saved as safetensors + a JSON manifest, never a pickle.
"""

from __future__ import annotations

import json
import logging
import mmap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor
from torch.nn import functional as F

from research.retrieval.configs import AUTO, PlaidConfig
from research.retrieval.exact import ExactSearcher, Results, gather_ranges, require_file, require_k
from research.retrieval.maxsim import maxsim_flat, segment_max
from research.retrieval.plaid_auto import auto_candidates, auto_centroids, auto_rerank

log = logging.getLogger(__name__)

INDEX = "index.safetensors"
# The fp16 tokens stage 5 re-ranks with (written unless `rerank` is 0).
TOKENS = "tokens.safetensors"
# k-means trains on at most this many sampled tokens per centroid (faiss's own cap is 256).
SAMPLE_PER_CENTROID = 64
# Candidates decompressed and scored at once (~2.5k tokens, ~1 MB: cache-sized; 2.5x faster
# than decompressing 1024 candidates at once here).
DECOMPRESS_BLOCK = 64
# Tokens assigned to their centroid per matmul while building.
ASSIGN_BLOCK = 65536
STORED = ("centroids", "codes", "token_centroids", "offsets", "cutoffs", "weights")


class PlaidIndex(ExactSearcher):
    """Compressed token index; it keeps codes, never the fp32 tokens. The centroids and bucket
    cutoffs are learnt from the first `add`; later adds are encoded with them."""

    kind = "plaid"
    config: PlaidConfig

    def __init__(self, config: PlaidConfig | None = None, **params: Any) -> None:
        super().__init__(config, **params)
        self._centroids: Tensor | None = None  # [C, D] unit rows
        self._cutoffs = torch.empty(0)  # [2^nbits - 1] bucket boundaries of residual values
        self._weights = torch.empty(0)  # [2^nbits] value each bucket decodes to
        # [256, 8 / nbits]: what each byte of codes decodes to, so decompression is one gather.
        self._byte_values = torch.empty(0)
        self._codes = torch.empty(0, 0, dtype=torch.uint8)  # [T, D * nbits / 8] packed buckets
        self._token_centroids = torch.empty(0, dtype=torch.int32)  # [T]
        self._cell_offsets = torch.zeros(1, dtype=torch.long)  # centroid -> its documents (CSR)
        self._cell_documents = torch.empty(0, dtype=torch.int32)
        self._rerank_tokens: Tensor | None = None  # [T, D] fp16, kept unless config.rerank is 0
        self._logged: dict[str, int | None] = {}  # the sizes last logged, to log each change once

    @property
    def bytes_per_token(self) -> float:
        """Bytes per token held in memory: codes and centroid id (the inverted lists are
        rebuilt on load; the fp16 re-rank tokens are memory-mapped: `rerank_bytes_per_token`)."""
        return self._codes.shape[1] + self._token_centroids.element_size()

    def __repr__(self) -> str:
        using = " ".join(f"{key}={value}" for key, value in self.resolved.items())
        return f"{super().__repr__()} using {using}"

    @property
    def resolved(self) -> dict[str, int | None]:
        """The centroids, candidates and rerank this index uses: "auto" resolved for its size
        now (centroids fixed by the first `add`, None before it; candidates and rerank from the
        documents it holds, so they grow as documents are added). Saved in the manifest."""
        return {
            "centroids": None if self._centroids is None else len(self._centroids),
            "candidates": self._sized("candidates", auto_candidates),
            "rerank": self._sized("rerank", auto_rerank),
        }

    @property
    def rerank_bytes_per_token(self) -> int:
        """Bytes per token of the fp16 tokens kept for stage 5 (0 when `rerank` is 0)."""
        return (
            0
            if self._rerank_tokens is None
            else self._rerank_tokens.shape[1] * self._rerank_tokens.element_size()
        )

    def add(self, document_ids: list[str], embeddings: list[Tensor]) -> None:
        tokens = self._append(document_ids, embeddings)
        if tokens is None:
            return
        if self.config.rerank:
            half = tokens.half()
            self._rerank_tokens = (
                half if self._rerank_tokens is None else torch.cat([self._rerank_tokens, half])
            )
        tokens = tokens.float()
        if self._centroids is None:
            self._train(tokens)
        assigned = self._assign(tokens)
        # In blocks: bucketize returns int64, 8 bytes per dimension of every token at once.
        codes = torch.cat(
            [
                self._encode(
                    tokens[start : start + ASSIGN_BLOCK], assigned[start : start + ASSIGN_BLOCK]
                )
                for start in range(0, len(tokens), ASSIGN_BLOCK)
            ]
        )
        self._codes = torch.cat([self._codes, codes]) if len(self._codes) else codes
        self._token_centroids = torch.cat([self._token_centroids, assigned.int()])
        self._build_cells()

    def search(self, queries: list[Tensor], k: int = 10) -> list[Results]:
        """The `k` best (document id, MaxSim score) pairs per query, best first: scores on the
        fp16 tokens when `rerank` > 0, else on the decompressed tokens."""
        k = require_k(self.kind, k)
        if not queries or self._centroids is None:
            return [[] for _ in queries]
        self._log_resolved()
        return [self._search_one(query.float(), k) for query in self._query_tokens(queries)]

    def save(self, path: str | Path) -> None:
        """`path`/index.safetensors (centroids, codes, bucket tables, offsets) + the manifest."""
        folder = self._folder_to_save(path)
        tensors = {name: getattr(self, f"_{name}").contiguous() for name in STORED}
        save_file(tensors, folder / INDEX)
        if self._rerank_tokens is not None:
            save_file({"tokens": self._rerank_tokens.contiguous()}, folder / TOKENS)
        self._write_manifest(folder, resolved=self.resolved)

    @classmethod
    def load(cls, path: str | Path) -> PlaidIndex:
        folder = Path(path)
        index = cls._from_manifest(folder)
        tensors = load_file(require_file(folder, INDEX))
        missing = [name for name in STORED if name not in tensors]
        if missing or len(tensors["offsets"]) != len(index) + 1:
            raise ValueError(
                f"{folder / INDEX} does not match {folder}'s manifest (missing "
                f"{missing or 'nothing'}, {len(tensors.get('offsets', [])) - 1} documents for "
                f"{len(index)} ids); save the index again"
            )
        for name in STORED:
            setattr(index, f"_{name}", tensors[name])
        index._dim = index._centroids.shape[1]
        if index.config.rerank:
            index._rerank_tokens = memory_mapped(require_file(folder, TOKENS), "tokens")
            if len(index._rerank_tokens) != len(index._codes):
                raise ValueError(
                    f"{folder / TOKENS} holds {len(index._rerank_tokens)} tokens for "
                    f"{len(index._codes)} in {folder / INDEX}; save the index again"
                )
        index._decode_bytes()
        index._build_cells()
        return index

    def _train(self, tokens: Tensor) -> None:
        """k-means centroids on a token sample, then the residual buckets from the sample."""
        import faiss

        dim, nbits = tokens.shape[1], self.config.nbits
        if dim * nbits % 8:
            raise ValueError(
                f"plaid index needs embedding size x nbits to fill whole bytes, got D={dim} "
                f"and nbits={nbits}; choose nbits from 1, 2, 4, 8 with D a multiple of 8"
            )
        generator = torch.Generator().manual_seed(self.config.seed)
        n_centroids = min(self._sized("centroids", auto_centroids, len(tokens)), len(tokens))
        sample = tokens[torch.randperm(len(tokens), generator=generator)]
        sample = sample[: n_centroids * SAMPLE_PER_CENTROID].contiguous()
        kmeans = faiss.Kmeans(
            dim,
            n_centroids,
            niter=self.config.kmeans_iterations,
            seed=self.config.seed,
            spherical=True,
            max_points_per_centroid=SAMPLE_PER_CENTROID,
            verbose=False,
        )
        kmeans.train(sample.numpy())
        self._centroids = F.normalize(torch.from_numpy(kmeans.centroids).float(), dim=1)
        residuals = (sample - self._centroids[self._assign(sample)]).flatten()
        values = residuals[torch.randperm(len(residuals), generator=generator)[: 2**24]]
        buckets = 2**nbits
        self._cutoffs = torch.quantile(values, torch.arange(1, buckets) / buckets)
        self._weights = torch.quantile(values, (torch.arange(buckets) + 0.5) / buckets)
        self._decode_bytes()
        self._log_resolved()

    def _sized(self, key: str, rule: Callable[[int], int], size: int | None = None) -> int:
        """Parameter `key` as configured, or when "auto" the `rule`'s value for `size` (default:
        the documents held)."""
        value = getattr(self.config, key)
        return rule(len(self) if size is None else size) if value == AUTO else value

    def _log_resolved(self) -> None:
        """Log the sizes in use when they differ from those last logged: once per index, and
        again when added documents grow the auto candidates and rerank."""
        if self.resolved != self._logged:
            self._logged = self.resolved
            sizes = ", ".join(
                f"{key} {value}" + (" (auto)" if getattr(self.config, key) == AUTO else "")
                for key, value in self._logged.items()
            )
            log.info("plaid index, %d documents, %d tokens: %s", len(self), self.num_tokens, sizes)

    def _decode_bytes(self) -> None:
        every_byte = torch.arange(256, dtype=torch.uint8)[:, None]
        self._byte_values = self._weights[unpack(every_byte, self.config.nbits).long()]

    def _encode(self, tokens: Tensor, assigned: Tensor) -> Tensor:
        """Packed bucket codes of the residuals of `tokens` from their `assigned` centroids."""
        buckets = torch.bucketize(tokens - self._centroids[assigned], self._cutoffs)
        return pack(buckets.to(torch.uint8), self.config.nbits)

    def _assign(self, tokens: Tensor) -> Tensor:
        """Nearest centroid (inner product) of each token, in blocks of ASSIGN_BLOCK tokens."""
        return torch.cat(
            [
                (tokens[start : start + ASSIGN_BLOCK] @ self._centroids.T).argmax(1)
                for start in range(0, len(tokens), ASSIGN_BLOCK)
            ]
        )

    def _build_cells(self) -> None:
        """Inverted lists: the documents with at least one token in each centroid's cell."""
        n_documents = len(self)
        documents = torch.repeat_interleave(torch.arange(n_documents), self._offsets.diff())
        pairs = torch.unique(self._token_centroids.long() * n_documents + documents)
        cells = pairs // n_documents
        counts = torch.bincount(cells, minlength=len(self._centroids))
        self._cell_offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        self._cell_documents = (pairs % n_documents).int()

    def _decompress(self, token_rows: Tensor) -> Tensor:
        """Unit-norm approximations of the tokens at `token_rows`: centroid + bucket values."""
        # F.embedding: a table lookup 3-4x faster here than advanced indexing.
        codes = self._codes[token_rows].long()
        residuals = F.embedding(codes, self._byte_values).view(len(codes), -1)
        centroids = F.embedding(self._token_centroids[token_rows].long(), self._centroids)
        return F.normalize(residuals.add_(centroids), dim=1)

    def _search_one(self, query: Tensor, k: int) -> Results:
        """PLAID's stages for one query [Lq, D]: probe and prune by centroid scores, rank the
        decompressed candidates, re-rank the best of them exactly."""
        rerank = self._sized("rerank", auto_rerank) if self._rerank_tokens is not None else 0
        scores, documents = self._rank_decompressed(query, self._candidates(query), max(k, rerank))
        if rerank:
            token_rows, offsets = self._token_rows(documents)
            tokens = self._rerank_tokens[token_rows].float()
            scores, local = self._top_k_flat([query], tokens, offsets, k)
            scores, documents = scores[0], documents[local[0]]
        return self._results(scores[:k], documents[:k])

    def _candidates(self, query: Tensor) -> Tensor:
        """Stages 1-3: the `candidates` documents with the best centroid-only MaxSim among
        those with a token in a probed cell."""
        cell_scores = query @ self._centroids.T  # [Lq, C]
        probed = cell_scores.topk(min(self.config.probes, len(self._centroids)), dim=1)
        starts = self._cell_offsets[probed.indices]
        lengths = (self._cell_offsets[probed.indices + 1] - starts).flatten()
        entries, _ = gather_ranges(starts.flatten(), lengths)
        documents = self._cell_documents[entries].long()
        query_token = torch.arange(len(query)).repeat_interleave(probed.indices.shape[1])
        # Each query token's best probed centroid per document: a document's tokens stand in
        # as their centroids, and only the probed cells are looked at (0 elsewhere).
        approximate = segment_max(
            probed.values.flatten().repeat_interleave(lengths)[None],
            (query_token.repeat_interleave(lengths) * len(self) + documents)[None],
            len(query) * len(self),
        ).view(len(query), len(self))
        found = documents.unique()
        candidates = self._sized("candidates", auto_candidates)
        best = approximate[:, found].sum(0).topk(min(candidates, len(found)))
        return found[best.indices]

    def _rank_decompressed(
        self, query: Tensor, documents: Tensor, depth: int
    ) -> tuple[Tensor, Tensor]:
        """The `depth` best of `documents` by MaxSim on decompressed tokens: (scores, documents).
        Decompressed DECOMPRESS_BLOCK documents at a time, so a block stays in cache."""
        one_query = torch.zeros(len(query), dtype=torch.long)
        scores = []
        for block in documents.split(DECOMPRESS_BLOCK):
            rows, offsets = self._token_rows(block)
            owner = torch.repeat_interleave(torch.arange(len(block)), offsets.diff())
            tokens = self._decompress(rows)
            scores.append(maxsim_flat(query, one_query, 1, tokens, owner, len(block))[0])
        best = torch.cat(scores).topk(min(depth, len(documents)))
        return best.values, documents[best.indices]


def memory_mapped(file: Path, name: str) -> Tensor:
    """Tensor `name` of safetensors `file` (fp16), backed by a copy-on-write memory map, so a
    search reads from disk only the pages of the rows it gathers. safetensors' own loaders copy
    the whole tensor into memory; the format is an 8-byte header size, a JSON header, the data."""
    with file.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    header_size = int.from_bytes(mapped[:8], "little")
    entry = json.loads(mapped[8 : 8 + header_size]).get(name, {})
    if entry.get("dtype") != "F16":
        raise ValueError(f"{file} holds no float16 tensor {name!r}; save the index again")
    start, stop = entry["data_offsets"]
    flat = torch.frombuffer(
        mapped, dtype=torch.float16, offset=8 + header_size + start, count=(stop - start) // 2
    )
    return flat.view(entry["shape"])


def pack(buckets: Tensor, nbits: int) -> Tensor:
    """[T, D] bucket numbers < 2^nbits -> [T, D * nbits / 8] bytes, 8 / nbits per byte."""
    per_byte = 8 // nbits
    shifts = torch.arange(per_byte, dtype=torch.uint8) * nbits
    grouped = buckets.view(len(buckets), -1, per_byte) << shifts
    return grouped.sum(-1, dtype=torch.uint8)


def unpack(codes: Tensor, nbits: int) -> Tensor:
    """The inverse of `pack`: [T, B] bytes -> [T, B * 8 / nbits] bucket numbers."""
    per_byte = 8 // nbits
    shifts = torch.arange(per_byte, dtype=torch.uint8) * nbits
    return ((codes[..., None] >> shifts) & (2**nbits - 1)).view(len(codes), -1)
