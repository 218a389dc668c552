"""The retrieval LightningDataModule: train tuples and eval queries of a BEIR-format dataset."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from research.data.base import SplitDataModule
from research.data.beir.datasets import EvalQueries, Example, TrainExamples, collate
from research.data.beir.distillation import read_distillation
from research.data.beir.sampling import judged, subset
from research.data.beir.sources import Folder, Hub, RetrievalSplit, Source
from research.data.configs import BEIRDataConfig, RetrievalDataConfig
from research.data.negatives import cached_bm25_negatives

log = logging.getLogger(__name__)


class RetrievalDataModule(SplitDataModule):
    """Train tuples (query, positive, hard negatives) and eval queries of a BEIR dataset.

    `eval_corpus` "full" searches the whole corpus -- every document of corpus.jsonl, also those
    only train queries judge, when one file holds all splits; "split" only the documents judged
    in that split (as CodeSearchNet does), and then negatives are mined from the train split's
    judged documents only, so no val/test document is seen in training. The corpus searched and
    its size are logged at every evaluation, with a warning when "full" mixes in documents
    judged only by other splits. With `val_fraction` the val queries are that seeded fraction of
    the train queries, held out of training. Nothing is read before `setup`. Subclasses build
    `config` and say where the data is: a folder `path` or a hub `name`, and the names of its
    train/val/test splits.
    """

    config: RetrievalDataConfig

    def __init__(self, path: str | None, name: str | None, split_names: dict[str, str]) -> None:
        super().__init__()
        self.path, self.name, self.split_names = path, name, split_names
        self.collate_fn = collate
        self.splits: dict[str, Dataset] = {}
        self._source: Source | None = None
        self._eval: dict[str, RetrievalSplit] = {}
        self.val_fraction: float | None = None  # set by subclasses that carve val from train
        self._held_out: set[str] | None = None

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = Folder(Path(self.path)) if self.path else Hub(str(self.name))
        return self._source

    @property
    def negatives_dir(self) -> Path:
        """Mined negatives go to the project's cache under data_dir, never into the dataset
        (which may be read-only or shared); the file name is a digest of everything mined from,
        so two datasets, or a dataset whose files changed, never share an entry."""
        return Path(self.config.data_dir) / "cache" / "bm25_negatives"

    def retrieval_split(self, split: str) -> RetrievalSplit:
        """The corpus to search for "val" or "test", its kept queries and their qrels."""
        if split not in ("val", "test"):
            raise ValueError(f"retrieval_split({split!r}): choose one of: val, test")
        if split not in self._eval:
            whole = self._whole(split)
            corpus = whole.corpus if self.config.eval_corpus == "full" else judged(whole)
            kept = subset(
                list(whole.queries), self.config.max_eval_queries, self.config.seed, split
            )
            self._eval[split] = RetrievalSplit(
                corpus,
                {q: whole.queries[q] for q in kept},
                {q: whole.qrels[q] for q in kept},
                self._describe(split, whole, len(corpus)),
            )
            if self.config.eval_corpus == "full" and len(judged(whole)) < len(corpus):
                log.warning("%s", self._eval[split].described)
        return self._eval[split]

    def held_out(self) -> set[str]:
        """The train queries kept for validation (`val_fraction`); none without it."""
        if self.val_fraction is None:
            return set()
        if self._held_out is None:
            ids = sorted(self.source.split(self.split_names["train"]).queries)
            size = max(1, round(self.val_fraction * len(ids)))
            self._held_out = set(subset(ids, size, self.config.seed, "val_fraction"))
        return self._held_out

    def _whole(self, split: str) -> RetrievalSplit:
        """All judged queries of a val/test split; val from train under `val_fraction`."""
        if split == "test" or self.val_fraction is None:
            return self.source.split(self.split_names[split])
        train = self.source.split(self.split_names["train"])
        kept = self.held_out()
        return RetrievalSplit(
            train.corpus,
            {q: text for q, text in train.queries.items() if q in kept},
            {q: docs for q, docs in train.qrels.items() if q in kept},
        )

    def _describe(self, split: str, whole: RetrievalSplit, searched: int) -> str:
        """One line: which documents a split searches, how many, and what else was possible."""
        source = self.path or self.name
        queries = (
            f"{len(whole.queries)} queries held out of {self.split_names['train']} "
            f"(val_fraction={self.val_fraction})"
            if split == "val" and self.val_fraction is not None
            else f"{len(whole.queries)} {self.split_names[split]} queries"
        )
        own = len(judged(whole))
        if self.config.eval_corpus == "split":
            return f"{source} {split}: {queries} search the {searched} documents they judge"
        return (
            f"{source} {split}: {queries} search the FULL corpus, {searched} documents "
            f"(eval_corpus=full), of which {own} are judged by them; if the corpus holds other "
            "splits' documents, data.eval_corpus=split searches only the judged ones"
        )

    def setup(self, stage: str | None = None) -> None:
        wanted = {"fit": ("train", "val"), "validate": ("val",), "test": ("test",)}
        for split in wanted.get(stage or "", ("train", "val", "test")):
            if split in self.splits:
                continue
            if split == "train":
                self.splits[split] = self._train_examples()
            else:
                self.splits[split] = EvalQueries(self.retrieval_split(split).queries)

    def _train_examples(self) -> TrainExamples:
        queries, corpus = self.source.queries, self.source.corpus
        config = self.config
        if config.distillation_file:
            rows = read_distillation(Path(config.distillation_file), queries, corpus)
            ids = list({row[0] for row in rows})
            kept = set(subset(ids, config.max_train_queries, config.seed, "train"))
            examples = [row for row in rows if row[0] in kept - self.held_out()]
        else:
            examples = self._contrastive_examples()
        log.info(
            "%s %s: %d training examples",
            self.path or self.name,
            self.split_names["train"],
            len(examples),
        )
        return TrainExamples(queries, corpus, examples)

    def _contrastive_examples(self) -> list[Example]:
        """One example per (query, positive); the examples of one query share its negatives."""
        config = self.config
        train = self.source.split(self.split_names["train"])
        corpus = train.corpus if config.eval_corpus == "full" else judged(train)
        positives = {
            query: sorted(doc for doc, score in docs.items() if score > 0 and doc in corpus)
            for query, docs in train.qrels.items()
        }
        held_out = self.held_out()
        usable = [q for q, docs in positives.items() if docs and q not in held_out]
        if not usable:
            split = self.split_names["train"]
            raise ValueError(
                f"{self.path or self.name}: no training examples; the {split!r} qrels judge no "
                "query relevant (score > 0) to a document that is there to train on"
            )
        kept = subset(usable, config.max_train_queries, config.seed, "train")
        negatives: dict[str, list[str]] = {query: [] for query in kept}
        if config.n_negatives:
            negatives = cached_bm25_negatives(
                self.negatives_dir,
                corpus,
                {query: train.queries[query] for query in kept},
                {query: positives[query] for query in kept},
                config.n_negatives,
            )
        return [
            (query, [doc, *negatives[query]], None) for query in kept for doc in positives[query]
        ]


class BEIRDataModule(RetrievalDataModule):
    """A BEIR dataset from a local folder (`path`) or the hub (`name`), exactly one of them."""

    def __init__(self, config: BEIRDataConfig | None = None, **params: Any) -> None:
        config = BEIRDataConfig.build(config, params)
        names = {"train": config.train_split, "val": config.val_split, "test": config.test_split}
        super().__init__(config.path, config.name, names)
        self.config = config
        self.val_fraction = config.val_fraction
