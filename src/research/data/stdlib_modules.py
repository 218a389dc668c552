"""Which top-level standard-library module a class's or function's docstring comes from.

The corpus is `stdlib_text`'s (`stdlib_docs`: the running Python's stdlib, tests and vendored
code left out), tokenized with its cached WordPiece tokenizer (trained without labels on all of
the corpus). Examples are the class and function docstrings (module docstrings name their module)
of the `num_classes` top-level modules with the most of them; class i is the i-th most frequent
(ties by name), named in `class_names`. A text found under two modules is dropped (its label is
ambiguous); a text repeated within one module is kept once, under its first name, so no text is
both trained on and tested. An example is [CLS] and the text's first max_len - 1 tokens, padded
per batch. The split is by a hash of (module, qualified name), not by module, since the module
is the label. The build is cached under `data_dir/stdlib_modules/<fingerprint>`; the
fingerprint covers the Python version (the stdlib differs between versions) and every parameter.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import torch

from research.data.base import SplitDataModule
from research.data.configs import StdlibModulesConfig
from research.data.sequences import PAD, LabelledSequences, pad_batch
from research.data.stdlib_text import StdlibDoc, StdlibTextDataModule, split_of, stdlib_docs
from research.utils.atomic import replacing

SPLITS = ("train", "val", "test")


def module_examples(num_classes: int) -> tuple[list[str], list[StdlibDoc]]:
    """The class names, most frequent first, and one example per distinct labelled text."""
    first: dict[str, StdlibDoc] = {}
    modules: defaultdict[str, set[str]] = defaultdict(set)
    for doc in stdlib_docs():  # sorted, so `first` keeps each text's first (module, name)
        if doc.kind != "module":
            modules[doc.text].add(doc.module)
            first.setdefault(doc.text, doc)
    unique = [doc for text, doc in first.items() if len(modules[text]) == 1]
    counts = Counter(doc.module for doc in unique)
    if num_classes > len(counts):
        raise ValueError(
            f"data.num_classes={num_classes} but this Python's stdlib has {len(counts)} "
            f"modules with docstrings; choose at most {len(counts)}"
        )
    class_names = sorted(counts, key=lambda module: (-counts[module], module))[:num_classes]
    kept = set(class_names)
    return class_names, [doc for doc in unique if doc.module in kept]


class StdlibModulesDataModule(SplitDataModule):
    """Docstring -> top-level module; `class_names` and per-split `names` are filled by setup."""

    def __init__(self, config: StdlibModulesConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = StdlibModulesConfig.build(config, params)
        self.collate_fn = pad_batch
        self.class_names: list[str] = []
        self.names: dict[str, list[str]] = {}  # "<source module>:<qualname>" per example
        self.splits: dict[str, LabelledSequences] = {}

    def text_corpus(self) -> StdlibTextDataModule:
        """The MLM corpus at its default build, whose cached tokenizer this task shares."""
        return StdlibTextDataModule(
            data_dir=self.config.data_dir, vocab_size=self.config.vocab_size
        )

    @property
    def fingerprint(self) -> str:
        config = self.config
        facts = [platform.python_version(), self.text_corpus().fingerprint, config.num_classes]
        facts += [config.max_len, config.val_fraction, config.test_fraction, "stdlib-modules-v1"]
        return hashlib.sha1(json.dumps(facts).encode()).hexdigest()[:12]

    @property
    def cache_dir(self) -> Path:
        return Path(self.config.data_dir) / "stdlib_modules" / self.fingerprint

    def _build(self) -> dict[str, Any]:
        path = self.cache_dir / "examples.pt"
        if path.is_file():
            return torch.load(path, weights_only=True)
        config = self.config
        class_names, examples = module_examples(self.config.num_classes)
        tokenizer = self.text_corpus().tokenizer()
        cls = tokenizer.token_to_id("[CLS]")
        encoded = tokenizer.encode_batch([doc.text for doc in examples])
        rows: dict[str, list[tuple[list[int], int, str]]] = {split: [] for split in SPLITS}
        for doc, encoding in zip(examples, encoded, strict=True):
            split = split_of(f"{doc.module}:{doc.name}", config.val_fraction, config.test_fraction)
            ids = [cls, *encoding.ids[: config.max_len - 1]]
            rows[split].append((ids, class_names.index(doc.module), doc.name))
        build: dict[str, Any] = {"class_names": class_names}
        for split, items in rows.items():
            ids = torch.full((len(items), config.max_len), PAD, dtype=torch.int32)
            for row, (tokens, _, _) in enumerate(items):
                ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.int32)
            build[split] = {
                "ids": ids,
                "lengths": torch.tensor([len(tokens) for tokens, _, _ in items]),
                "labels": torch.tensor([label for _, label, _ in items]),
                "names": [name for _, _, name in items],
            }
        with replacing(path, durable=False) as partial:
            torch.save(build, partial)
        return build

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        build = self._build()
        self.class_names = list(build["class_names"])
        for split in SPLITS:
            part = build[split]
            rows = zip(part["ids"], part["lengths"].tolist(), strict=True)
            sequences = [ids[:length].long() for ids, length in rows]
            self.splits[split] = LabelledSequences(sequences, part["labels"])
            self.names[split] = list(part["names"])
