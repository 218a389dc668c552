"""Exhaustive ColBERT search: the MaxSim of every query against every stored document.

The exact searcher is the reference an approximate index is measured against, and the re-ranker
one uses: `VoyagerIndex` (voyager.py) extends it and scores its candidates with the same `_top_k`.
Documents are kept as one flat [n_tokens, D] matrix plus offsets (document i owns rows
offsets[i]:offsets[i + 1]), so a saved folder is a safetensors file and a JSON manifest -- never
a pickle -- and a chunk of documents is packed to [n, Lmax, D] + mask with one gather.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from research.retrieval.configs import SEARCH_CONFIGS, ExactSearchConfig
from research.retrieval.maxsim import maxsim_matrix, pad_embeddings

MANIFEST = "manifest.json"
EMBEDDINGS = "embeddings.safetensors"
# At most this many query-token x document-token similarities (256 MiB in float32) exist at once:
# queries are scored against a chunk of documents in blocks sized to fit it.
SIMILARITY_BUDGET = 2**26

Results = list[tuple[str, float]]


def require_k(kind: str, k: object) -> int:
    """`k` if it is a positive integer, else a one-line ValueError naming the searcher."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{kind} searcher search k must be an integer >= 1, got {k!r}")
    return k


class ExactSearcher:
    """Brute-force MaxSim search, `chunk_size` documents at a time with a running top-k.

    Memory per step is one packed chunk plus the similarities of a block of queries against it,
    so lower `chunk_size` for long documents. Embeddings keep the dtype of the first `add`.
    Its parameters are its kind's declaration in `SEARCH_CONFIGS` (`ExactSearchConfig` here).
    """

    kind = "exact"
    config: ExactSearchConfig

    def __init__(self, config: ExactSearchConfig | None = None, **params: Any) -> None:
        self.config = SEARCH_CONFIGS[self.kind].build(config, params)
        self.document_ids: list[str] = []
        self._tokens: Tensor | None = None  # [n_tokens, D], set by the first add
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
        if len(document_ids) != len(embeddings):
            raise ValueError(
                f"{self.kind} searcher add got {len(document_ids)} document ids but "
                f"{len(embeddings)} embeddings; give one embedding tensor per id"
            )
        if not document_ids:
            return
        seen = set(self.document_ids)
        for document_id in document_ids:
            if document_id in seen:
                raise ValueError(
                    f"{self.kind} searcher add got document id {document_id!r}, which it "
                    "already holds or got twice; document ids must be unique"
                )
            seen.add(document_id)
        dim = embeddings[0].shape[-1] if self._tokens is None else self._tokens.shape[1]
        tokens = torch.cat([self._checked(e, "document", dim).detach().cpu() for e in embeddings])
        if self._tokens is not None:
            tokens = torch.cat([self._tokens, tokens.to(self._tokens.dtype)])
        lengths = torch.tensor([len(e) for e in embeddings])
        self._offsets = torch.cat([self._offsets, self.num_tokens + lengths.cumsum(0)])
        self._tokens = tokens
        self.document_ids = self.document_ids + list(document_ids)

    def search(self, queries: list[Tensor], k: int = 10) -> list[Results]:
        """The `k` best (document id, MaxSim score) pairs per query, best first."""
        k = require_k(self.kind, k)
        if not queries or self._tokens is None:
            return [[] for _ in queries]
        padded, mask = self._pack_queries(queries)
        scores, rows = self._top_k(padded, mask, torch.arange(len(self)), k)
        return [self._results(s, r) for s, r in zip(scores, rows, strict=True)]

    def save(self, path: str | Path) -> None:
        """Write `path`/embeddings.safetensors (flat tokens + offsets), then the JSON manifest."""
        folder = self._folder_to_save(path)
        save_file(
            {"tokens": self._tokens.contiguous(), "offsets": self._offsets}, folder / EMBEDDINGS
        )
        manifest = {"kind": self.kind, "params": self.params(), "document_ids": self.document_ids}
        (folder / MANIFEST).write_text(json.dumps(manifest))

    @classmethod
    def load(cls, path: str | Path) -> ExactSearcher:
        """The searcher saved in `path` by `save`; it must be of this class's kind."""
        folder = Path(path)
        manifest = read_manifest(folder)
        if manifest["kind"] != cls.kind:
            raise ValueError(
                f"{folder} holds a {manifest['kind']!r} index, not {cls.kind!r}; "
                "load it with load_searcher"
            )
        searcher = cls(**manifest["params"])
        tensors = load_file(require_file(folder, EMBEDDINGS))
        searcher._tokens, searcher._offsets = tensors["tokens"], tensors["offsets"]
        searcher.document_ids = list(manifest["document_ids"])
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
        if self._tokens is None:
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

    def _pack_queries(self, queries: list[Tensor]) -> tuple[Tensor, Tensor]:
        """[Nq, Lq, D] in the stored dtype, and the mask of each query's tokens."""
        dim, dtype = self._tokens.shape[1], self._tokens.dtype
        return pad_embeddings(
            [self._checked(q, "query", dim).detach().cpu().to(dtype) for q in queries]
        )

    def _pack_documents(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """Documents `rows` as [n, Lmax, D] (zeros where padded) and their [n, Lmax] mask."""
        starts = self._offsets[rows]
        lengths = self._offsets[rows + 1] - starts
        steps = torch.arange(max(int(lengths.max()), 1))
        mask = steps < lengths[:, None]
        documents = self._tokens.new_zeros(len(rows), len(steps), self._tokens.shape[1])
        documents[mask] = self._tokens[(starts[:, None] + steps)[mask]]
        return documents, mask

    def _top_k(
        self, queries: Tensor, query_mask: Tensor, rows: Tensor, k: int
    ) -> tuple[Tensor, Tensor]:
        """Each query's k best documents among `rows`: (scores, rows), [Nq, <= k], best first."""
        best_scores = torch.empty(len(queries), 0)
        best_rows = torch.empty(len(queries), 0, dtype=torch.long)
        for start in range(0, len(rows), self.config.chunk_size):
            chunk = rows[start : start + self.config.chunk_size]
            documents, document_mask = self._pack_documents(chunk)
            best_scores = torch.cat(
                [best_scores, self._score(queries, query_mask, documents, document_mask)], 1
            )
            best_rows = torch.cat([best_rows, chunk.expand(len(queries), -1)], 1)
            best_scores, order = best_scores.topk(min(k, best_scores.shape[1]), dim=1)
            best_rows = best_rows.gather(1, order)
        return best_scores, best_rows

    def _score(
        self, queries: Tensor, query_mask: Tensor, documents: Tensor, document_mask: Tensor
    ) -> Tensor:
        """[Nq, n] MaxSim, queries taken in blocks that keep within SIMILARITY_BUDGET."""
        per_query = max(1, queries.shape[1] * documents.shape[:2].numel())
        block = max(1, SIMILARITY_BUDGET // per_query)
        return torch.cat(
            [
                maxsim_matrix(
                    queries[i : i + block],
                    query_mask[i : i + block],
                    documents,
                    document_mask,
                    chunk_size=self.config.chunk_size,
                )
                for i in range(0, len(queries), block)
            ]
        )

    def _results(self, scores: Tensor, rows: Tensor) -> Results:
        return [
            (self.document_ids[row], score)
            for row, score in zip(rows.tolist(), scores.tolist(), strict=True)
        ]


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
