"""Exhaustive ColBERT search: the MaxSim of every query against every stored document.

The exact searcher is the reference an approximate index is measured against, and the re-ranker
one uses: `VoyagerIndex` (voyager.py) extends it and scores its candidates with the same `_top_k`.
Documents are kept as one flat [n_tokens, D] matrix plus offsets (document i owns rows
offsets[i]:offsets[i + 1]), so a saved folder is a safetensors file and a JSON manifest -- never
a pickle. Search never pads: a block of whole documents is scored with one matmul against the
queries' flat tokens and a segment max over document offsets (`maxsim_flat`);
benchmarks/colbert_index.py prints its time over a plain matmul of the same FLOPs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from research.retrieval.configs import SEARCH_CONFIGS, ExactSearchConfig
from research.retrieval.maxsim import maxsim_flat

MANIFEST = "manifest.json"
EMBEDDINGS = "embeddings.safetensors"

Results = list[tuple[str, float]]


def require_k(kind: str, k: object) -> int:
    """`k` if it is a positive integer, else a one-line ValueError naming the searcher."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{kind} searcher search k must be an integer >= 1, got {k!r}")
    return k


class ExactSearcher:
    """Brute-force MaxSim search, block by block of whole documents with a running top-k.

    A block's query-token x document-token similarities take at most `memory_budget_mb`
    (a block holds at least one document). Embeddings keep the dtype of the first `add`.
    Its parameters are its kind's declaration in `SEARCH_CONFIGS` (`ExactSearchConfig` here).
    """

    kind = "exact"
    config: ExactSearchConfig

    def __init__(self, config: ExactSearchConfig | None = None, **params: Any) -> None:
        self.config = SEARCH_CONFIGS[self.kind].build(config, params)
        self.document_ids: list[str] = []
        self._tokens: Tensor | None = None  # [n_tokens, D], set by the first add
        self._dim: int | None = None  # embedding size and dtype, fixed by the first add
        self._dtype = torch.float32
        self._offsets = torch.zeros(1, dtype=torch.long)

    def params(self) -> dict[str, int]:
        """The constructor arguments, as saved in the manifest."""
        return self.config.as_dict()

    def __len__(self) -> int:
        return len(self.document_ids)

    def __repr__(self) -> str:
        params = ", ".join(f"{key}={value}" for key, value in self.params().items())
        return f"{type(self).__name__}({params}, documents={len(self)})"

    @property
    def num_tokens(self) -> int:
        return int(self._offsets[-1])

    def add(self, document_ids: list[str], embeddings: list[Tensor]) -> None:
        """Append documents: one [n_tokens_i, D] tensor each, as `ColBERT.encode` returns."""
        tokens = self._append(document_ids, embeddings)
        if tokens is not None:
            self._tokens = tokens if self._tokens is None else torch.cat([self._tokens, tokens])

    def _append(self, document_ids: list[str], embeddings: list[Tensor]) -> Tensor | None:
        """Check the documents, record their ids and offsets, and return their tokens as one
        flat [n, D] CPU tensor in the stored dtype (None when there are none to add)."""
        if len(document_ids) != len(embeddings):
            raise ValueError(
                f"{self.kind} searcher add got {len(document_ids)} document ids but "
                f"{len(embeddings)} embeddings; give one embedding tensor per id"
            )
        if not document_ids:
            return None
        seen = set(self.document_ids)
        for document_id in document_ids:
            if document_id in seen:
                raise ValueError(
                    f"{self.kind} searcher add got document id {document_id!r}, which it "
                    "already holds or got twice; document ids must be unique"
                )
            seen.add(document_id)
        if self._dim is None:
            self._dim, self._dtype = embeddings[0].shape[-1], embeddings[0].dtype
        checked = [self._checked(e, "document", self._dim).detach().cpu() for e in embeddings]
        tokens = torch.cat(checked).to(self._dtype)
        lengths = torch.tensor([len(e) for e in embeddings])
        self._offsets = torch.cat([self._offsets, self.num_tokens + lengths.cumsum(0)])
        self.document_ids = self.document_ids + list(document_ids)
        return tokens

    def search(self, queries: list[Tensor], k: int = 10) -> list[Results]:
        """The `k` best (document id, MaxSim score) pairs per query, best first."""
        k = require_k(self.kind, k)
        if not queries or not len(self):
            return [[] for _ in queries]
        scores, rows = self._top_k(self._query_tokens(queries), None, k)
        return [self._results(s, r) for s, r in zip(scores, rows, strict=True)]

    def save(self, path: str | Path) -> None:
        """Write `path`/embeddings.safetensors (flat tokens + offsets), then the JSON manifest."""
        folder = self._folder_to_save(path)
        save_file(
            {"tokens": self._tokens.contiguous(), "offsets": self._offsets}, folder / EMBEDDINGS
        )
        self._write_manifest(folder)

    def _write_manifest(self, folder: Path, **extra: Any) -> None:
        """The JSON half of a saved searcher: kind, parameters, a kind's `extra` entries (e.g.
        the sizes "auto" resolved to), document ids (written last)."""
        manifest = {
            "kind": self.kind,
            "params": self.params(),
            **extra,
            "document_ids": self.document_ids,
        }
        (folder / MANIFEST).write_text(json.dumps(manifest))

    @classmethod
    def _from_manifest(cls, folder: Path) -> ExactSearcher:
        """A searcher of this class with the saved parameters and document ids, no tokens."""
        manifest = read_manifest(folder)
        if manifest["kind"] != cls.kind:
            raise ValueError(
                f"{folder} holds a {manifest['kind']!r} index, not {cls.kind!r}; "
                "load it with load_searcher"
            )
        searcher = cls(**manifest["params"])
        searcher.document_ids = list(manifest["document_ids"])
        return searcher

    @classmethod
    def load(cls, path: str | Path) -> ExactSearcher:
        """The searcher saved in `path` by `save`; it must be of this class's kind."""
        folder = Path(path)
        searcher = cls._from_manifest(folder)
        tensors = load_file(require_file(folder, EMBEDDINGS))
        searcher._tokens, searcher._offsets = tensors["tokens"], tensors["offsets"]
        searcher._dim, searcher._dtype = searcher._tokens.shape[1], searcher._tokens.dtype
        if len(searcher._offsets) != len(searcher) + 1 or searcher.num_tokens != len(
            searcher._tokens
        ):
            raise ValueError(
                f"{folder / EMBEDDINGS} does not match {folder / MANIFEST}: "
                f"{len(searcher._offsets) - 1} documents and {len(searcher._tokens)} tokens "
                f"stored for {len(searcher)} document ids"
            )
        return searcher

    def _folder_to_save(self, path: str | Path) -> Path:
        folder = Path(path)
        if not len(self):
            raise ValueError(f"{self.kind} searcher is empty: add documents before saving {folder}")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _checked(self, embedding: Tensor, what: str, dim: int) -> Tensor:
        """`embedding` if it is [n, dim], else a one-line error."""
        if embedding.dim() != 2 or embedding.shape[1] != dim:
            raise ValueError(
                f"{self.kind} searcher needs {what} embeddings of shape [n_tokens, {dim}], "
                f"got {tuple(embedding.shape)}"
            )
        return embedding

    def _query_tokens(self, queries: list[Tensor]) -> list[Tensor]:
        """Each query as a checked [n_tokens, D] CPU tensor in the stored dtype."""
        return [
            self._checked(q, "query", self._dim).detach().cpu().to(self._dtype) for q in queries
        ]

    def _top_k(self, queries: list[Tensor], rows: Tensor | None, k: int) -> tuple[Tensor, Tensor]:
        """Each query's k best documents among `rows` (None: all): (scores, rows), [Nq, <= k],
        best first. Candidate rows are gathered into one flat matrix first; the whole corpus is
        scored in place, block by block."""
        if rows is None:
            tokens, offsets = self._tokens, self._offsets
        else:
            token_rows, offsets = self._token_rows(rows)
            tokens = self._tokens[token_rows]
        scores, local = self._top_k_flat(queries, tokens, offsets, k)
        return scores, (local if rows is None else rows[local])

    def _token_rows(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """The flat-matrix rows of the tokens of documents `rows`, concatenated in that order,
        and the offsets of each document within them."""
        return gather_ranges(self._offsets[rows], self._offsets[rows + 1] - self._offsets[rows])

    def _top_k_flat(
        self, queries: list[Tensor], tokens: Tensor, offsets: Tensor, k: int
    ) -> tuple[Tensor, Tensor]:
        """Top-k over the documents of (tokens, offsets), one matmul and one segment max per
        block of whole documents; a block's similarities keep within `memory_budget_mb`."""
        query_tokens = torch.cat(queries)
        lengths = torch.tensor([len(q) for q in queries])
        query_of_token = torch.repeat_interleave(torch.arange(len(queries)), lengths)
        budget = int(self.config.memory_budget_mb * 2**20) // tokens.element_size()
        block_tokens = max(1, budget // max(1, len(query_tokens)))
        n_documents = len(offsets) - 1
        best_scores = torch.empty(len(queries), 0)
        best_rows = torch.empty(len(queries), 0, dtype=torch.long)
        start = 0
        while start < n_documents:
            limit = offsets[start] + block_tokens
            stop = min(
                max(int(torch.searchsorted(offsets, limit, right=True)) - 1, start + 1), n_documents
            )
            block_lengths = offsets[start + 1 : stop + 1] - offsets[start:stop]
            scores = maxsim_flat(
                query_tokens,
                query_of_token,
                len(queries),
                tokens[offsets[start] : offsets[stop]],
                torch.repeat_interleave(torch.arange(stop - start), block_lengths),
                stop - start,
            )
            best_scores = torch.cat([best_scores, scores.float()], 1)
            best_rows = torch.cat(
                [best_rows, torch.arange(start, stop).expand(len(queries), -1)], 1
            )
            best_scores, order = best_scores.topk(min(k, best_scores.shape[1]), dim=1)
            best_rows = best_rows.gather(1, order)
            start = stop
        return best_scores, best_rows

    def _results(self, scores: Tensor, rows: Tensor) -> Results:
        return [
            (self.document_ids[row], score)
            for row, score in zip(rows.tolist(), scores.tolist(), strict=True)
        ]


def gather_ranges(starts: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """The indices starts[i] .. starts[i] + lengths[i] - 1 for every i, concatenated, and the
    offsets [0, l0, l0 + l1, ...] of each range within them."""
    ends = lengths.cumsum(0)
    indices = torch.repeat_interleave(starts - (ends - lengths), lengths)
    return indices + torch.arange(len(indices)), torch.cat([lengths.new_zeros(1), ends])


def require_file(folder: Path, name: str) -> Path:
    """`folder`/`name`, or a one-line FileNotFoundError saying the folder is incomplete."""
    file = folder / name
    if not file.is_file():
        raise FileNotFoundError(f"{folder} is an incomplete searcher folder: {name} is missing")
    return file


def read_manifest(folder: Path) -> dict:
    """The manifest of a saved searcher folder, its kind checked against the known kinds."""
    kinds = ", ".join(SEARCH_CONFIGS)
    manifest_file = folder / MANIFEST
    if not manifest_file.is_file():
        raise FileNotFoundError(
            f"{folder} is not a saved searcher (no {MANIFEST}); valid kinds are {kinds}, "
            "each written by its .save(path)"
        )
    try:
        manifest = json.loads(manifest_file.read_text())
        kind = manifest["kind"]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{manifest_file} is not a searcher manifest ({err!r})") from None
    if kind not in SEARCH_CONFIGS:
        raise ValueError(f"{folder} holds an index of unknown kind {kind!r}; valid kinds: {kinds}")
    return manifest
