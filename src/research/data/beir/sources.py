"""Where a BEIR dataset is read from: a folder on disk or the HF hub; both give RetrievalSplits.

Corpus and queries are read once per source and shared by all its splits, never copied.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class RetrievalSplit:
    """What one split needs for search and scoring: the corpus, its queries, their judgements."""

    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    # Which corpus this is and why, logged at every evaluation ("" when not said).
    described: str = ""


def _document(row: dict[str, Any]) -> str:
    title, text = (row.get("title") or "").strip(), (row.get("text") or "").strip()
    return f"{title} {text}" if title else text


def _warn_repeated(where: str, repeated: dict[Any, None], what: str, kept: str) -> None:
    if repeated:
        first = next(iter(repeated))
        example = " ".join(first) if isinstance(first, tuple) else first
        warnings.warn(
            f"{where}: {what} given more than once: {len(repeated)} (e.g. {example}); the "
            f"last {kept} of each is kept",
            stacklevel=4,
        )


def _by_id(pairs: Iterable[tuple[str, str]], where: str) -> dict[str, str]:
    """id -> text; an id given more than once keeps its last copy (as BEIR's own loader does),
    with one warning counting them: two documents under one id would otherwise silently be
    one, and a judgement of the dropped one would score the other."""
    kept: dict[str, str] = {}
    repeated: dict[str, None] = {}
    for key, text in pairs:
        if key in kept:
            repeated[key] = None
        kept[key] = text
    _warn_repeated(where, repeated, "_ids", "copy")
    return kept


def _judged(rows: Iterable[tuple[str, str, int]], where: str) -> dict[str, dict[str, int]]:
    """query -> {document: score}; a (query, document) pair judged more than once keeps its
    last score, with one warning counting them."""
    qrels: dict[str, dict[str, int]] = {}
    repeated: dict[tuple[str, str], None] = {}
    for query, doc, score in rows:
        docs = qrels.setdefault(query, {})
        if doc in docs:
            repeated[query, doc] = None
        docs[doc] = score
    _warn_repeated(where, repeated, "(query-id, corpus-id) pairs", "score")
    return qrels


def json_lines(
    path: Path, parse: Callable[[dict[str, Any]], T], expected: str
) -> list[tuple[int, T]]:
    """(line number, parse(object)) for every non-blank line; a bad line is a one-line error."""
    parsed = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                parsed.append((number, parse(json.loads(line))))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise ValueError(f"{path}:{number} must be a JSON object with {expected}") from None
    return parsed


class Source:
    """Where a BEIR dataset comes from; corpus and queries are read once for all its splits."""

    corpus: dict[str, str]
    queries: dict[str, str]

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        raise NotImplementedError

    where: str = "the dataset"

    def split(self, split: str) -> RetrievalSplit:
        """The judged queries that have a text, judged on documents of the corpus; the corpus is
        shared, never copied. Judgements naming an unknown query or document are dropped with
        a warning (a relevant document that cannot be retrieved would silently lower every
        score); a split left with no query is an error."""
        qrels, corpus = self.qrels(split), self.corpus
        if not self.queries:
            raise ValueError(f"{self.where}: the queries file holds no queries")
        unknown_queries = sorted(q for q in qrels if q not in self.queries)
        unknown_docs = {d for docs in qrels.values() for d in docs if d not in corpus}
        kept_qrels = {
            query: {doc: score for doc, score in qrels[query].items() if doc in corpus}
            for query in sorted(qrels)
            if query in self.queries
        }
        kept_qrels = {query: docs for query, docs in kept_qrels.items() if docs}
        if unknown_queries or unknown_docs:
            warnings.warn(
                f"{self.where} qrels {split!r}: {len(unknown_queries)} judged query ids are not "
                f"in the queries file and {len(unknown_docs)} judged document ids are not in the "
                f"corpus (e.g. {(unknown_queries or sorted(unknown_docs))[0]}); their judgements "
                f"are dropped, {len(kept_qrels)} of {len(qrels)} queries remain",
                stacklevel=2,
            )
        if not kept_qrels:
            raise ValueError(
                f"{self.where} qrels {split!r}: no judged query is left once query and "
                "document ids missing from the queries file and corpus are dropped; check that "
                "the qrels match this corpus and queries"
            )
        kept = {query: self.queries[query] for query in kept_qrels}
        return RetrievalSplit(corpus, kept, kept_qrels)


class Folder(Source):
    """A BEIR folder on disk."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise FileNotFoundError(f"BEIR folder {folder} does not exist")
        self.folder = folder
        self.where = str(folder)

    def _rows(self, name: str) -> list[dict[str, Any]]:
        path = self.folder / name
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} not found; a BEIR folder holds corpus.jsonl, queries.jsonl and "
                "qrels/<split>.tsv"
            )
        rows = json_lines(path, lambda row: {**row, "_id": str(row["_id"])}, "an _id field")
        return [row for _, row in rows]

    @cached_property
    def corpus(self) -> dict[str, str]:  # type: ignore[override]
        rows = self._rows("corpus.jsonl")
        return _by_id(
            ((row["_id"], _document(row)) for row in rows), str(self.folder / "corpus.jsonl")
        )

    @cached_property
    def queries(self) -> dict[str, str]:  # type: ignore[override]
        rows = self._rows("queries.jsonl")
        if not rows:
            raise ValueError(f"{self.folder / 'queries.jsonl'} holds no queries")
        texts = ((row["_id"], (row.get("text") or "").strip()) for row in rows)
        return _by_id(texts, str(self.folder / "queries.jsonl"))

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        path = self.folder / "qrels" / f"{split}.tsv"
        if not path.is_file():
            existing = sorted(p.stem for p in (self.folder / "qrels").glob("*.tsv"))
            listed = ", ".join(existing) or "none"
            raise FileNotFoundError(
                f"{path} not found; the splits in {self.folder} are: {listed} (without a dev "
                "split, data.val_fraction=0.1 validates on a tenth of the train queries)"
            )
        rows = []
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                fields = line.rstrip("\n").split("\t")
                if (number == 1 and fields[0] == "query-id") or not line.strip():
                    continue
                try:
                    query, doc, score = fields
                    rows.append((query, doc, int(score)))
                except ValueError:
                    raise ValueError(
                        f"{path}:{number} must be query-id<TAB>corpus-id<TAB>integer score"
                    ) from None
        return _judged(rows, str(path))


class Hub(Source):
    """`BeIR/<name>` and `BeIR/<name>-qrels` through `datasets.load_dataset` (cached by datasets).

    The same calls load a local copy in the hub's layout: a folder whose README declares the
    configs "corpus" and "queries", beside a folder `<that folder>-qrels` of `<split>.tsv` files.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.where = name

    def _load(self, *args: str) -> Any:
        import datasets

        try:
            return datasets.load_dataset(*args)
        except Exception as err:  # noqa: BLE001 - hub, network and file errors alike
            reason = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
            raise FileNotFoundError(
                f"BEIR dataset {' '.join(args)!r} could not be loaded ({type(err).__name__}: "
                f"{reason}); without network use a local BEIR folder (data.path)"
            ) from None

    @cached_property
    def corpus(self) -> dict[str, str]:  # type: ignore[override]
        rows = self._load(self.name, "corpus")["corpus"]
        return _by_id(((str(row["_id"]), _document(row)) for row in rows), f"{self.name} corpus")

    @cached_property
    def queries(self) -> dict[str, str]:  # type: ignore[override]
        rows = self._load(self.name, "queries")["queries"]
        texts = ((str(row["_id"]), (row.get("text") or "").strip()) for row in rows)
        return _by_id(texts, f"{self.name} queries")

    @cached_property
    def _qrels(self) -> Any:
        return self._load(f"{self.name}-qrels")

    def _split_name(self, split: str) -> str:
        """`datasets` names the split of a file `dev.tsv` "validation" (by its split keywords),
        so BEIR's "dev" is also looked up under the name `datasets` gave it."""
        from datasets.data_files import SPLIT_KEYWORDS

        aliases = [str(name) for name, words in SPLIT_KEYWORDS.items() if split in words]
        found = [name for name in [split, *aliases] if name in self._qrels]
        if not found:
            raise FileNotFoundError(
                f"{self.name}-qrels has no split {split!r}; its splits are: "
                + ", ".join(sorted(self._qrels))
            )
        return found[0]

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        part = self._qrels[self._split_name(split)]
        columns = (part["query-id"], part["corpus-id"], part["score"])
        rows = ((str(q), str(d), int(score)) for q, d, score in zip(*columns, strict=True))
        return _judged(rows, f"{self.name}-qrels {split}")


def load_beir_folder(folder: str | Path, split: str) -> RetrievalSplit:
    """One split of a local BEIR folder, with the whole corpus."""
    return Folder(Path(folder)).split(split)


def load_beir_hub(name: str, split: str) -> RetrievalSplit:
    """One split of a hub BEIR dataset (e.g. "BeIR/scifact", "test"); needs network once."""
    return Hub(name).split(split)
