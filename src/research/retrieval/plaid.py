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
(centroids when the first `build` trains, the others at search time); `resolved` says what ran,
and the manifest keeps it.

The build's memory does not grow with the corpus beyond the compact codes: `add` (which may be
called once per block of documents) only writes the documents' tokens in fp16 to a temporary
file (token_file.py); `build` (run by `search` and `save` when documents are pending) trains the
k-means on a sample of `kmeans_points_per_centroid` tokens per centroid read from that file,
then reads it back block by block to assign, encode and pack, each block's working memory within
`memory_budget_mb`. The file is the fp16 re-rank tokens, written to the saved folder in chunks.
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
from safetensors.torch import load_file
from torch import Tensor
from torch.nn import functional as F

from research.retrieval.configs import AUTO, PlaidConfig
from research.retrieval.exact import ExactSearcher, Results, gather_ranges, require_file, require_k
from research.retrieval.maxsim import maxsim_flat, segment_max
from research.retrieval.plaid_auto import auto_candidates, auto_centroids, auto_rerank
from research.retrieval.token_file import TokenFile, write_safetensors

log = logging.getLogger(__name__)

INDEX = "index.safetensors"
# The fp16 tokens stage 5 re-ranks with (written unless `rerank` is 0).
TOKENS = "tokens.safetensors"
# Candidates decompressed and scored at once (~2.5k tokens, ~1 MB: cache-sized; 2.5x faster
# than decompressing 1024 candidates at once here).
DECOMPRESS_BLOCK = 64
# Bytes per token and dimension while a block is encoded, besides its centroid similarities:
# fp16 as read, fp32, the residual, int64 buckets, the packed codes.
ENCODE_BYTES_PER_DIM = 20
# Residual values the bucket cutoffs and medians are the quantiles of (64 MB in fp32).
RESIDUAL_VALUES = 2**24
STORED = ("centroids", "codes", "token_centroids", "offsets", "cutoffs", "weights")


class PlaidIndex(ExactSearcher):
    """Compressed token index; it keeps codes, never the fp32 tokens. `add` documents (all at
    once or block by block), then `build` (or search or save, which build first): the first
    build learns the centroids and bucket cutoffs from a sample of every token added; later
    builds encode the documents added since with them."""

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
        # The added tokens in fp16 on disk: all of them while kept for the re-rank, else only
        # those not yet encoded (None when none are).
        self._token_file: TokenFile | None = None
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
        now (centroids fixed by the first `build`, None before it; candidates and rerank from the
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
        """Record documents and write their tokens to the index's fp16 file; the next `build`
        encodes them. Adding a corpus in blocks holds one block's tokens in memory at a time."""
        if embeddings and self._dim is None:
            require_whole_bytes(embeddings[0].shape[-1], self.config.nbits)
        tokens = self._append(document_ids, embeddings)
        if tokens is not None:
            self._pending_file().append(tokens)

    def build(self) -> None:
        """Encode the documents added since the last build, a block at a time: on the first
        build, learn the centroids and bucket cutoffs from a sample of their tokens first."""
        encoded, total = len(self._token_centroids), self.num_tokens
        if encoded == total:
            return
        keep = self._keeps_tokens()
        file = self._pending_file()
        first = encoded if keep else 0  # the file row of the first token to encode
        if self._centroids is None:
            self._train(file, total)
        codes = torch.empty(total, self._dim * self.config.nbits // 8, dtype=torch.uint8)
        assigned = torch.empty(total, dtype=torch.int32)
        if encoded:
            codes[:encoded], assigned[:encoded] = self._codes, self._token_centroids
        row = encoded
        for block in file.blocks(first, first + total - encoded, self._block_rows()):
            tokens = block.float()
            nearest = self._assign(tokens)
            codes[row : row + len(block)] = self._encode(tokens, nearest)
            assigned[row : row + len(block)] = nearest.int()
            row += len(block)
        self._codes, self._token_centroids = codes, assigned
        if keep:
            self._rerank_tokens = file.mapped()
        else:
            self._token_file = None  # closing it deletes it
        self._build_cells()

    def search(self, queries: list[Tensor], k: int = 10) -> list[Results]:
        """The `k` best (document id, MaxSim score) pairs per query, best first: scores on the
        fp16 tokens when `rerank` > 0, else on the decompressed tokens."""
        k = require_k(self.kind, k)
        self.build()
        if not queries or self._centroids is None:
            return [[] for _ in queries]
        self._log_resolved()
        return [self._search_one(query.float(), k) for query in self._query_tokens(queries)]

    def save(self, path: str | Path) -> None:
        """`path`/index.safetensors (centroids, codes, bucket tables, offsets) + the manifest."""
        self.build()
        folder = self._folder_to_save(path)
        write_safetensors(folder / INDEX, {name: getattr(self, f"_{name}") for name in STORED})
        if self._rerank_tokens is not None:
            # From the file when the build wrote one: its pages never become resident.
            kept = self._rerank_tokens if self._token_file is None else self._token_file
            write_safetensors(folder / TOKENS, {"tokens": kept})
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

    def _pending_file(self) -> TokenFile:
        """The fp16 token file, created on first use; a loaded index that keeps its re-rank
        tokens copies them in first, so that the file holds all of them."""
        if self._token_file is None:
            self._token_file = TokenFile(self._dim)
            if self._rerank_tokens is not None:
                for block in self._rerank_tokens.split(self._block_rows()):
                    self._token_file.append(block)
        return self._token_file

    def _keeps_tokens(self) -> bool:
        """Whether the fp16 tokens are kept for the re-rank: decided by `rerank` when the first
        build runs, unchanged after it."""
        encoded = len(self._token_centroids) > 0
        return self._rerank_tokens is not None if encoded else self.config.rerank != 0

    def _block_rows(self) -> int:
        """Tokens encoded per block: a block's centroid similarities and working copies take
        about `memory_budget_mb` (at least one token)."""
        n_centroids = 1 if self._centroids is None else len(self._centroids)
        per_token = 4 * n_centroids + ENCODE_BYTES_PER_DIM * self._dim
        return max(1, int(self.config.memory_budget_mb * 2**20) // per_token)

    def _train(self, file: TokenFile, n_tokens: int) -> None:
        """k-means centroids on a sample of the file's tokens (sized from all `n_tokens`
        added), then the residual buckets from the sample."""
        import faiss

        generator = torch.Generator().manual_seed(self.config.seed)
        n_centroids = min(self._sized("centroids", auto_centroids, n_tokens), n_tokens)
        per_centroid = self.config.kmeans_points_per_centroid
        rows = sample_rows(n_tokens, n_centroids * per_centroid, generator)
        sample = file.gather(rows, self._block_rows()).float()
        kmeans = faiss.Kmeans(
            self._dim,
            n_centroids,
            niter=self.config.kmeans_iterations,
            seed=self.config.seed,
            spherical=True,
            max_points_per_centroid=per_centroid,
            verbose=False,
        )
        kmeans.train(sample.numpy())
        self._centroids = F.normalize(torch.from_numpy(kmeans.centroids).float(), dim=1)
        # The buckets from the residual values of at most RESIDUAL_VALUES // D sampled tokens.
        sample = sample[sample_rows(len(sample), RESIDUAL_VALUES // self._dim, generator)]
        values = (sample - self._centroids[self._assign(sample)]).flatten()
        buckets = 2**self.config.nbits
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
        """Nearest centroid (inner product) of each token, `_block_rows` tokens per matmul."""
        return torch.cat(
            [(block @ self._centroids.T).argmax(1) for block in tokens.split(self._block_rows())]
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


def require_whole_bytes(dim: int, nbits: int) -> None:
    """A one-line error unless D x nbits fills whole bytes (the codes are packed per byte)."""
    if dim * nbits % 8:
        raise ValueError(
            f"plaid index needs embedding size x nbits to fill whole bytes, got D={dim} "
            f"and nbits={nbits}; choose nbits from 1, 2, 4, 8 with D a multiple of 8"
        )


def sample_rows(n: int, size: int, generator: torch.Generator) -> Tensor:
    """`size` distinct rows of `n` (all of them, in order, when size >= n), drawn uniformly, in
    random order. Its memory is O(size), not O(n): for n far above size, rows drawn with
    replacement are deduplicated (about 1.25 x size drawn is enough when n >= 8 x size)."""
    if size >= n:
        return torch.arange(n)
    if n <= 8 * size:
        return torch.randperm(n, generator=generator)[:size]
    drawn = torch.randint(n, (size + size // 4 + 16,), generator=generator).unique()
    return drawn[torch.randperm(len(drawn), generator=generator)[:size]]


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
