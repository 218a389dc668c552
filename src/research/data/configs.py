"""The parameters of every datamodule here, declared once and torch-free.

Each dataclass is both what the CLI checks before torch loads and what the datamodule's
constructor takes (`DigitsDataModule(config)` or `DigitsDataModule(**fields)`), so a default,
range or rule exists in one place only. `targets` names the classes built from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from research.config.schema import Schema, fail, spec

# ListOps' vocabulary and classes are fixed by the task (research.data.listops.TOKENS): PAD, the
# ten digits, "[", "]" and four operators; the value 0-9.
LISTOPS_VOCAB_SIZE = 17
LISTOPS_NUM_CLASSES = 10
# What a retrieval split searches: the whole corpus, or only the documents its qrels judge.
EVAL_CORPORA = ("full", "split")


@dataclass
class LoaderConfig(Schema):
    """What every datamodule's loaders take (research.data.base.SplitDataModule)."""

    batch_size: int = spec(32, ge=1)
    num_workers: int = spec(0, ge=0)
    seed: int = spec(0, ge=0)


@dataclass
class FractionsConfig(LoaderConfig):
    """A datamodule with files (or a cache) under data_dir whose val and test splits are these
    fractions of its data."""

    data_dir: str = "data"
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    test_fraction: float = spec(0.1, gt=0.0, lt=1.0)


@dataclass
class ImageDataConfig(FractionsConfig):
    """Shared by the digits and torchvision datamodules (research.data.images)."""

    targets = (
        "research.data.digits.DigitsDataModule",
        "research.data.vision.MNISTDataModule",
        "research.data.vision.FashionMNISTDataModule",
        "research.data.vision.CIFAR10DataModule",
    )
    batch_size: int = spec(64, ge=1)
    normalize: bool = True
    download: bool = False
    pin_memory: bool = False
    num_classes: int = spec(10, ge=2)
    in_channels: int = spec(1, ge=1)
    image_size: int = spec(8, ge=1)


@dataclass
class AssociativeRecallConfig(LoaderConfig):
    """Associative recall (research.data.recall); vocab_size and num_classes are facts the model
    config reads, accepted here and derived from num_keys and num_values by the datamodule."""

    targets = ("research.data.recall.AssociativeRecallDataModule",)
    num_pairs: int = spec(8, ge=1)
    num_keys: int = spec(32, ge=1)
    num_values: int = spec(16, ge=2)
    train_size: int = spec(4000, ge=1)
    val_size: int = spec(500, ge=1)
    test_size: int = spec(500, ge=1)
    batch_size: int = spec(64, ge=1)
    vocab_size: int | None = None
    num_classes: int | None = None
    eval_num_pairs: list[int] | None = None

    def check(self, at: str) -> None:
        longest = max([self.num_pairs, *(self.eval_num_pairs or [])])
        if longest > self.num_keys:
            fail(at, "num_keys", f"={self.num_keys} must be >= the most pairs asked ({longest})")


@dataclass
class ListOpsConfig(LoaderConfig):
    """ListOps (research.data.listops): trained at min_len..max_len tokens, evaluated in each
    longer band up to the next of eval_max_lens."""

    targets = ("research.data.listops.ListOpsDataModule",)
    max_depth: int = spec(4, ge=1)
    max_args: int = spec(5, ge=2)
    min_len: int = spec(16, ge=1)
    max_len: int = spec(64, ge=1)
    eval_max_lens: list[int] | None = None
    train_size: int = spec(10000, ge=1)
    val_size: int = spec(500, ge=1)
    test_size: int = spec(500, ge=1)
    batch_size: int = spec(64, ge=1)
    vocab_size: int = spec(LISTOPS_VOCAB_SIZE, choices=(LISTOPS_VOCAB_SIZE,))
    num_classes: int = spec(LISTOPS_NUM_CLASSES, choices=(LISTOPS_NUM_CLASSES,))

    def check(self, at: str) -> None:
        if self.min_len > self.max_len:
            fail(at, "max_len", f"={self.max_len} must be >= min_len={self.min_len}")
        bounds = [self.max_len, *(self.eval_max_lens or [])]
        if any(after <= before for before, after in pairwise(bounds)):
            fail(
                at,
                "eval_max_lens",
                f"={self.eval_max_lens} must increase, each above max_len={self.max_len}",
            )


@dataclass
class StdlibTextConfig(FractionsConfig):
    """Stdlib docstrings as token blocks for MLM (research.data.stdlib_text)."""

    targets = ("research.data.stdlib_text.StdlibTextDataModule",)
    vocab_size: int = spec(8000, ge=100)
    max_len: int = spec(128, ge=8)
    max_train_blocks: int | None = spec(None, ge=1)


@dataclass
class StdlibModulesConfig(FractionsConfig):
    """Docstring -> its top-level stdlib module (research.data.stdlib_modules)."""

    targets = ("research.data.stdlib_modules.StdlibModulesDataModule",)
    vocab_size: int = spec(8000, ge=100)
    num_classes: int = spec(10, ge=2)
    max_len: int = spec(128, ge=2)

    def check(self, at: str) -> None:
        if self.val_fraction + self.test_fraction >= 1.0:
            fail(at, "test_fraction", "plus val_fraction must be < 1, leaving a train split")


@dataclass
class HFTextConfig(LoaderConfig):
    """A text-classification dataset through datasets.load_dataset (research.data.hf_text)."""

    targets = ("research.data.hf_text.HFTextDataModule",)
    name: str = "ag_news"
    data_files: Any = None
    text_field: str = "text"
    label_field: str = "label"
    num_classes: int = spec(4, ge=2)
    vocab_size: int = spec(8000, ge=100)
    max_len: int = spec(128, ge=2)
    data_dir: str = "data"
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    max_train_size: int | None = spec(None, ge=1)


@dataclass
class LanguageModelDataConfig(FractionsConfig):
    """Token streams for causal language modelling (research.data.language_model): trained in
    windows of `context` tokens; evaluated at `context` and at each of `eval_lengths`, every
    length over the same first `eval_tokens` held-out tokens."""

    vocab_size: int = spec(8000, ge=300)  # byte-level BPE starts from 256 bytes
    context: int = spec(128, ge=2)
    eval_lengths: list[int] | None = None
    eval_tokens: int = spec(65536, ge=2)
    max_train_windows: int | None = spec(None, ge=1)

    @property
    def lengths(self) -> list[int]:
        """The context first, then every other evaluation length, ascending."""
        others = sorted(set(self.eval_lengths or []) - {self.context})
        return [self.context, *others]

    def check(self, at: str) -> None:
        if self.val_fraction + self.test_fraction >= 1.0:
            fail(at, "test_fraction", "plus val_fraction must be < 1, leaving a train split")
        if any(n < 2 for n in self.eval_lengths or []):
            fail(at, "eval_lengths", f"={self.eval_lengths} must all be >= 2")
        longest = max(self.lengths)
        if any(longest % n for n in self.lengths):
            fail(
                at,
                "eval_lengths",
                f"={self.eval_lengths} and context={self.context} must each divide the longest "
                f"({longest}), so that every length scores the same held-out tokens",
            )
        if self.eval_tokens < longest:
            fail(at, "eval_tokens", f"={self.eval_tokens} must be >= the longest length {longest}")


@dataclass
class StdlibCodeConfig(LanguageModelDataConfig):
    """The running Python's stdlib source as a code corpus (research.data.stdlib_code);
    `max_files` keeps the first files by path (a small corpus for tests)."""

    targets = ("research.data.stdlib_code.StdlibCodeDataModule",)
    max_files: int | None = spec(None, ge=3)


@dataclass
class HFLanguageModelConfig(LanguageModelDataConfig):
    """Any text dataset through datasets.load_dataset, for causal LM (research.data.hf_lm)."""

    targets = ("research.data.hf_lm.HFLanguageModelDataModule",)
    name: str = "wikitext"
    subset: str | None = "wikitext-103-raw-v1"
    data_files: Any = None
    text_field: str = "text"


@dataclass
class RetrievalDataConfig(LoaderConfig):
    """What every retrieval datamodule takes: negatives, subsets, the eval corpus
    (research.data.beir.datamodule.RetrievalDataModule)."""

    data_dir: str = "data"
    n_negatives: int = spec(1, ge=0)
    max_train_queries: int | None = spec(None, ge=1)
    max_eval_queries: int | None = spec(None, ge=1)
    eval_corpus: str = spec("full", choices=EVAL_CORPORA)
    distillation_file: str | None = None


@dataclass
class BEIRDataConfig(RetrievalDataConfig):
    """A BEIR folder (path) or hub dataset (name) (research.data.beir.BEIRDataModule)."""

    targets = ("research.data.beir.BEIRDataModule",)
    path: str | None = None
    name: str | None = None
    train_split: str = "train"
    val_split: str = "dev"
    test_split: str = "test"
    # Validate on this fraction of the train split's queries (held out of training) instead of
    # the val_split qrels: for datasets without qrels/dev.tsv. null: use val_split.
    val_fraction: float | None = spec(None, gt=0.0, lt=1.0)

    def check(self, at: str) -> None:
        if (self.path is None) == (self.name is None):
            given = (
                f"both are set (add {at}.name=null to read the folder)"
                if self.path is not None
                else "neither is set"
            )
            fail(
                at,
                "path",
                f"/ {at}.name: give exactly one, a local BEIR folder (path) or a hub dataset "
                f"such as BeIR/nfcorpus (name); {given}",
            )


@dataclass
class StdlibCodeSearchConfig(RetrievalDataConfig):
    """The stdlib code-search task (research.data.codesearch); the first five fields name the
    build (its cache folder), the rest are how it is read, as for any BEIR folder."""

    targets = ("research.data.codesearch.StdlibCodeSearchDataModule",)
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    test_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    min_query_words: int = spec(3, ge=1)
    min_code_lines: int = spec(2, ge=1)
    # Which module partition: 0 is the study's split; any other value deals the modules anew.
    partition: int = spec(0, ge=0)
    eval_corpus: str = spec("split", choices=EVAL_CORPORA)

    def check(self, at: str) -> None:
        if self.val_fraction + self.test_fraction >= 1.0:
            fail(
                at,
                "val_fraction",
                f"={self.val_fraction} plus test_fraction={self.test_fraction} must be < 1, "
                "leaving functions to train on",
            )
