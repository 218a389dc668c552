"""The parameters of every datamodule here, declared once and torch-free.

Each dataclass is both what the CLI checks before torch loads and what the datamodule's
constructor takes (`DigitsDataModule(config)` or `DigitsDataModule(**fields)`), so a default,
range or rule exists in one place only. `targets` names the classes built from it.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar

from research.config.batches import (
    LABELLED_IMAGES,
    LABELLED_SEQUENCES,
    QUERIES_AND_DOCUMENTS,
    TOKEN_BLOCKS,
    TOKEN_WINDOWS,
)
from research.config.schema import MAX_SEED, Schema, fail, spec
from research.data.tokenizer import SPECIAL

# ListOps' vocabulary and classes are fixed by the task (research.data.listops.TOKENS): PAD, the
# ten digits, "[", "]" and four operators; the value 0-9.
LISTOPS_VOCAB_SIZE = 17
MASK_TOKEN_ID = SPECIAL.index("[MASK]")
LISTOPS_NUM_CLASSES = 10
# The official files torchvision reads for each dataset (its resources, uncompressed), under
# data_dir: without download, a missing one is refused before the run dir is made.
_MNIST_FILES = tuple(
    f"{split}-{kind}"
    for split in ("train", "t10k")
    for kind in ("images-idx3-ubyte", "labels-idx1-ubyte")
)
TORCHVISION_FILES = {
    "research.data.vision.MNISTDataModule": ("MNIST/raw", _MNIST_FILES),
    "research.data.vision.FashionMNISTDataModule": ("FashionMNIST/raw", _MNIST_FILES),
    "research.data.vision.CIFAR10DataModule": (
        "cifar-10-batches-py",
        (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch", "batches.meta"),
    ),
}
# What a retrieval split searches: the whole corpus, or only the documents its qrels judge.
EVAL_CORPORA = ("full", "split")


@dataclass
class LoaderConfig(Schema):
    """What every datamodule's loaders take (research.data.base.SplitDataModule)."""

    batch_size: int = spec(32, ge=1)
    """Examples per batch, in every split (LM evaluation scales it to keep the tokens per batch)."""
    num_workers: int = spec(0, ge=0)
    """Loader worker processes; 0 loads in the main process (workers persist across epochs)."""
    seed: int = spec(0, ge=0, le=MAX_SEED)
    """Seeds the per-epoch train shuffle and every random draw of the datamodule (splits, data)."""


@dataclass
class FractionsConfig(LoaderConfig):
    """A datamodule with files (or a cache) under data_dir whose val and test splits are these
    fractions of its data."""

    data_dir: str = "data"
    """Folder of the dataset's files and of the builds cached from them (digits reads nothing)."""
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    """Share held out as the val split (images: of what test leaves); unused if the data has one."""
    test_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    """Share held out as the test split; unused if the data has its own (e.g. torchvision's)."""


@dataclass
class ImageDataConfig(FractionsConfig):
    """Shared by the digits and torchvision datamodules (research.data.images)."""

    targets = (
        "research.data.digits.DigitsDataModule",
        "research.data.vision.MNISTDataModule",
        "research.data.vision.FashionMNISTDataModule",
        "research.data.vision.CIFAR10DataModule",
    )
    gives = LABELLED_IMAGES
    batch_size: int = spec(64, ge=1)
    """Examples per batch, in every split's loader."""
    normalize: bool = True
    """Standardise each channel by the train split's mean and std (val/test use the same ones)."""
    download: bool = False
    """Let torchvision fetch missing files into data_dir (needs network; digits needs no files)."""
    pin_memory: bool = False
    """Page-locked loader batches, for faster copies to the GPU."""
    num_classes: int = spec(10, ge=2)
    """Classes of the labels: a fact the model config reads, not a choice."""
    in_channels: int = spec(1, ge=1)
    """Channels per image (1 grey, 3 colour): a fact the model config reads."""
    image_size: int = spec(8, ge=1)
    """Height and width of the square images: a fact the model config reads."""

    def check_machine(self, at: str, target: str, config: dict[str, Any]) -> None:
        expected = TORCHVISION_FILES.get(target)
        if expected is None or self.download:
            return
        folder, names = expected
        missing = next(
            (n for n in names if not (Path(self.data_dir).expanduser() / folder / n).is_file()),
            None,
        )
        if missing is not None:
            fail(
                at,
                "data_dir",
                f"={self.data_dir!r} lacks {folder}/{missing}; {at}.download=true fetches the "
                "official files, or copy them there",
            )


@dataclass
class AssociativeRecallConfig(LoaderConfig):
    """Associative recall (research.data.recall); vocab_size and num_classes are facts the model
    config reads, accepted here and derived from num_keys and num_values by the datamodule."""

    targets = ("research.data.recall.AssociativeRecallDataModule",)
    gives = LABELLED_SEQUENCES
    num_pairs: int = spec(8, ge=1)
    """Key-value pairs per training sequence, which is 2 x num_pairs + 1 tokens long."""
    num_keys: int = spec(32, ge=1)
    """Distinct key tokens; keys never repeat in a sequence, so at least the most pairs asked."""
    num_values: int = spec(16, ge=2)
    """Distinct value tokens, which are also the classes."""
    train_size: int = spec(4000, ge=1)
    """Training sequences generated."""
    val_size: int = spec(500, ge=1)
    """Validation sequences generated, per number of pairs."""
    test_size: int = spec(500, ge=1)
    """Test sequences generated, per number of pairs."""
    batch_size: int = spec(64, ge=1)
    """Examples per batch, in every split's loader."""
    vocab_size: int | None = None
    """For the model config: 1 + num_keys + num_values tokens (PAD, keys, values)."""
    num_classes: int | None = None
    """For the model config: num_values classes."""
    eval_num_pairs: list[int] | None = None
    """Pairs per sequence of extra val/test sets (longer sequences), logged as val/acc@<tokens>;
    they measure length extrapolation. null: none."""

    def check(self, at: str) -> None:
        longest = max([self.num_pairs, *(self.eval_num_pairs or [])])
        if longest > self.num_keys:
            fail(at, "num_keys", f"={self.num_keys} must be >= the most pairs asked ({longest})")


@dataclass
class ListOpsConfig(LoaderConfig):
    """ListOps (research.data.listops): trained at min_len..max_len tokens, evaluated in each
    longer band up to the next of eval_max_lens."""

    targets = ("research.data.listops.ListOpsDataModule",)
    gives = LABELLED_SEQUENCES
    max_depth: int = spec(4, ge=1)
    """Most operators nested in one expression."""
    max_args: int = spec(5, ge=2)
    """Most arguments of one operator (each takes at least 2)."""
    min_len: int = spec(16, ge=1)
    """Fewest tokens of a training (and val/acc) expression."""
    max_len: int = spec(64, ge=1)
    """Most tokens of a training (and val/acc) expression; the first eval band starts above it."""
    eval_max_lens: list[int] | None = None
    """Upper bounds of longer val/test bands, each starting above the previous bound, logged as
    val/acc@<bound>: length extrapolation. null: none."""
    train_size: int = spec(10000, ge=1)
    """Training expressions generated."""
    val_size: int = spec(500, ge=1)
    """Validation expressions generated, per length band."""
    test_size: int = spec(500, ge=1)
    """Test expressions generated, per length band."""
    batch_size: int = spec(64, ge=1)
    """Examples per batch, in every split's loader."""
    vocab_size: int = spec(LISTOPS_VOCAB_SIZE, choices=(LISTOPS_VOCAB_SIZE,))
    """Fixed by the task (PAD, 10 digits, [, ] and 4 operators): a fact the model config reads."""
    num_classes: int = spec(LISTOPS_NUM_CLASSES, choices=(LISTOPS_NUM_CLASSES,))
    """Fixed by the task (an expression's value, 0-9): a fact the model config reads."""

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


class WordPieceVocabulary:
    """Datasets tokenized by the WordPiece tokenizer research.data.tokenizer trains: its special
    tokens fix the [MASK] id a masked LM writes (a class fact, not a config key, so no run's
    identity changes with it). Data without one has no [MASK] token to give."""

    mask_token_id: ClassVar[int] = MASK_TOKEN_ID


@dataclass
class StdlibTextConfig(FractionsConfig, WordPieceVocabulary):
    """Stdlib docstrings as token blocks for MLM (research.data.stdlib_text)."""

    targets = ("research.data.stdlib_text.StdlibTextDataModule",)
    gives = TOKEN_BLOCKS
    vocab_size: int = spec(8000, ge=100)
    """Size of the WordPiece vocabulary trained on the corpus (each size is cached apart)."""
    max_len: int = spec(128, ge=8)
    """Tokens per block, [CLS] included."""
    max_train_blocks: int | None = spec(None, ge=1)
    """Train on only the first this many blocks (a quick run); null: all of them."""


@dataclass
class StdlibModulesConfig(FractionsConfig, WordPieceVocabulary):
    """Docstring -> its top-level stdlib module (research.data.stdlib_modules)."""

    targets = ("research.data.stdlib_modules.StdlibModulesDataModule",)
    gives = LABELLED_SEQUENCES
    vocab_size: int = spec(8000, ge=100)
    """Picks the stdlib_text WordPiece tokenizer of this size, which this task shares."""
    num_classes: int = spec(10, ge=2)
    """How many top-level modules to tell apart: those with the most docstrings."""
    max_len: int = spec(128, ge=2)
    """Most tokens per example, [CLS] included; longer docstrings are cut."""

    def check(self, at: str) -> None:
        if self.val_fraction + self.test_fraction >= 1.0:
            fail(at, "test_fraction", "plus val_fraction must be < 1, leaving a train split")


def check_data_files(at: str, data_files: Any) -> None:
    """Each local file or pattern of a builder's `data_files` (a path, a list, or split -> either)
    matches a file; a URL is left to the loader."""
    by_split = data_files if isinstance(data_files, dict) else {None: data_files}
    for split, given in by_split.items():
        for pattern in given if isinstance(given, list) else [given]:
            if not isinstance(pattern, str) or "://" in pattern:
                continue
            if not glob.glob(str(Path(pattern).expanduser()), recursive=True):
                key = "data_files" + (f".{split}" if split is not None else "")
                fail(at, key, f"={pattern!r} matches no file")


@dataclass
class HFTextConfig(LoaderConfig, WordPieceVocabulary):
    """A text-classification dataset through datasets.load_dataset (research.data.hf_text)."""

    targets = ("research.data.hf_text.HFTextDataModule",)
    gives = LABELLED_SEQUENCES
    name: str = "ag_news"
    """What datasets.load_dataset loads: a hub dataset (needs network) or a builder (json, csv)."""
    data_files: Any = None
    """Local files for a builder name, e.g. {train: a.jsonl}; null for a hub dataset."""
    text_field: str = "text"
    """Column holding the text."""
    label_field: str = "label"
    """Column holding the integer label."""
    num_classes: int = spec(4, ge=2)
    """Labels must lie in 0..num_classes - 1 (checked at setup); the model config reads it."""
    vocab_size: int = spec(8000, ge=100)
    """Size of the WordPiece vocabulary trained on the train split (cached per size)."""
    max_len: int = spec(128, ge=2)
    """Tokens per example, [CLS] included: longer texts are cut, shorter ones padded."""
    data_dir: str = "data"
    """Folder of the datasets cache (hf/) and of the trained tokenizers (hf_text/)."""
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    """Seeded share of the train split held out for validation; it is also the test set when the
    dataset has no test split."""
    max_train_size: int | None = spec(None, ge=1)
    """Train on only the first this many training examples (a quick run); null: all of them."""

    def check_machine(self, at: str, target: str, config: dict[str, Any]) -> None:
        check_data_files(at, self.data_files)


@dataclass
class LanguageModelDataConfig(FractionsConfig):
    """Token streams for causal language modelling (research.data.language_model): trained in
    windows of `context` tokens; evaluated at `context` and at each of `eval_lengths`, every
    length over the same first `eval_tokens` held-out tokens."""

    gives = TOKEN_WINDOWS
    vocab_size: int = spec(8000, ge=300)
    """Size of the byte-level BPE vocabulary trained on train (it starts from the 256 bytes)."""
    context: int = spec(128, ge=2)
    """Training context: tokens per window, and the first length evaluated (val/ppl)."""
    eval_lengths: list[int] | None = None
    """More lengths evaluated, logged as val/ppl@<n>; each must divide the longest. null: none."""
    eval_tokens: int = spec(65536, ge=2)
    """Held-out tokens every length predicts (cut to a multiple of the longest length)."""
    max_train_windows: int | None = spec(None, ge=1)
    """Train on only this many windows, spread evenly over the stream; null: all of them."""

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
    """Read only the first this many stdlib files by path (a small corpus for tests); null: all."""


@dataclass
class HFLanguageModelConfig(LanguageModelDataConfig):
    """Any text dataset through datasets.load_dataset, for causal LM (research.data.hf_lm)."""

    targets = ("research.data.hf_lm.HFLanguageModelDataModule",)
    name: str = "wikitext"
    """What datasets.load_dataset loads: a hub dataset (needs network) or a builder (json, text)."""
    subset: str | None = "wikitext-103-raw-v1"
    """The hub dataset's configuration; null for a builder or a dataset without configurations."""
    data_files: Any = None
    """Local files for a builder name, e.g. {train: a.jsonl}; null for a hub dataset."""
    text_field: str = "text"
    """Column holding the text; each row is one document."""

    def check_machine(self, at: str, target: str, config: dict[str, Any]) -> None:
        check_data_files(at, self.data_files)


@dataclass
class RetrievalDataConfig(LoaderConfig):
    """What every retrieval datamodule takes: negatives, subsets, the eval corpus
    (research.data.beir.datamodule.RetrievalDataModule)."""

    gives = QUERIES_AND_DOCUMENTS
    data_dir: str = "data"
    """Folder of this project's caches (mined BM25 negatives, built datasets), not the dataset's."""
    n_negatives: int = spec(1, ge=0)
    """BM25 hard negatives per (query, positive) pair, so 1 + n_negatives documents per query;
    0: in-batch negatives only. Unused with distillation_file."""
    max_train_queries: int | None = spec(None, ge=1)
    """Train on a seeded subset of this many queries; null: all of them."""
    max_eval_queries: int | None = spec(None, ge=1)
    """Search with a seeded subset of this many val/test queries; null: all of them."""
    eval_corpus: str = spec("full", choices=EVAL_CORPORA)
    """What val/test search: full, every document of the corpus (other splits' too); split, only
    the documents that split's qrels judge (and negatives come from train's judged ones only)."""
    distillation_file: str | None = None
    """JSON lines {"query_id", "document_ids", "scores"} of teacher scores to train on with the
    distillation loss; null: train on positives and BM25 negatives."""

    def check_machine(self, at: str, target: str, config: dict[str, Any]) -> None:
        teacher = self.distillation_file
        if teacher is not None and not Path(teacher).expanduser().is_file():
            fail(at, "distillation_file", f"={teacher!r} is not a file; give its path or null")


@dataclass
class BEIRDataConfig(RetrievalDataConfig):
    """A BEIR folder (path) or hub dataset (name) (research.data.beir.BEIRDataModule)."""

    targets = ("research.data.beir.BEIRDataModule",)
    path: str | None = None
    """A local BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv); give this or name."""
    name: str | None = None
    """A hub dataset such as BeIR/nfcorpus (qrels from BeIR/nfcorpus-qrels); give this or path."""
    train_split: str = "train"
    """The qrels split to train on."""
    val_split: str = "dev"
    """The qrels split to validate on (unused with val_fraction)."""
    test_split: str = "test"
    """The qrels split to test on."""
    val_fraction: float | None = spec(None, gt=0.0, lt=1.0)
    """Validate on this seeded fraction of the train split's queries (held out of training)
    instead of the val_split qrels: for datasets without qrels/dev.tsv. null: use val_split."""

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

    def check_machine(self, at: str, target: str, config: dict[str, Any]) -> None:
        """The folder's files this run reads (stat only; a file's content is read, and checked,
        when the data is set up)."""
        super().check_machine(at, target, config)
        if self.path is None:
            return
        folder = Path(self.path).expanduser()
        layout = "a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv"
        if not folder.is_dir():
            fail(at, "path", f"={self.path!r} is not a folder; {layout} (or give {at}.name)")
        splits = [self.train_split] if config.get("train", True) else []
        splits += [self.val_split] if self.val_fraction is None else []
        splits += [self.test_split] if config.get("test", True) else []
        needed = ["corpus.jsonl", "queries.jsonl", *(f"qrels/{s}.tsv" for s in splits)]
        missing = [name for name in dict.fromkeys(needed) if not (folder / name).is_file()]
        if missing:
            found = ", ".join(sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))) or "none"
            hint = (
                f"; without a {self.val_split} split, {at}.val_fraction=0.1 validates on a "
                "tenth of the train queries"
                if f"qrels/{self.val_split}.tsv" in missing
                else ""
            )
            fail(
                at,
                "path",
                f"={self.path!r} has no {', '.join(missing)}; {layout} (its splits: {found}){hint}",
            )


@dataclass
class StdlibCodeSearchConfig(RetrievalDataConfig):
    """The stdlib code-search task (research.data.codesearch); the first five fields name the
    build (its cache folder), the rest are how it is read, as for any BEIR folder."""

    targets = ("research.data.codesearch.StdlibCodeSearchDataModule",)
    val_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    """Share of the functions in the val split, dealt by whole top-level module."""
    test_fraction: float = spec(0.1, gt=0.0, lt=1.0)
    """Share of the functions in the test split, dealt by whole top-level module."""
    min_query_words: int = spec(3, ge=1)
    """Leave out functions whose docstring summary (first paragraph) has fewer words."""
    min_code_lines: int = spec(2, ge=1)
    """Leave out functions with fewer lines of code besides their docstring."""
    partition: int = spec(0, ge=0)
    """Which partition of the modules into splits: 0 is the original one; any other value deals
    the modules anew (another split)."""
    eval_corpus: str = spec("split", choices=EVAL_CORPORA)
    """What val/test search; split by default, as in CodeSearchNet: only that split's functions."""

    def check(self, at: str) -> None:
        if self.val_fraction + self.test_fraction >= 1.0:
            fail(
                at,
                "val_fraction",
                f"={self.val_fraction} plus test_fraction={self.test_fraction} must be < 1, "
                "leaving functions to train on",
            )
