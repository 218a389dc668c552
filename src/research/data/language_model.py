"""Token streams for causal language modelling, and how every length is evaluated alike.

Each split's documents are streamed (never all in memory), tokenized in chunks with a byte-level
BPE tokenizer trained on the train split, joined into one stream with an end-of-document token
after each, and cached under `data_dir/<name>/<fingerprint>/` (the fingerprint covers the source
and every build parameter) as a memory-mapped file (research.data.token_streams). Windows are
read from that file per batch, so memory does not grow with the corpus.
Training reads non-overlapping windows of `context` + 1 tokens (inputs and their next tokens).
Evaluation at a length n reads the held-out span's non-overlapping windows of n + 1 tokens with
stride n: the span is the first `eval_tokens` held-out tokens cut to a multiple of the longest
length, so every length predicts exactly the same tokens and only the context each prediction
sees changes (a token at offset j of its window sees j earlier tokens): perplexities at
different lengths are comparable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from research.data.base import SplitDataModule
from research.data.configs import LanguageModelDataConfig
from research.data.token_streams import TokenStream, read_streams, write_streams
from research.data.tokenizer import BYTE_LEVEL_SPECIAL, byte_level_bpe

SPLITS = ("train", "val", "test")


class LanguageModelDataModule(SplitDataModule):
    """Subclasses set `config` and `name` and say which documents each split holds: a large
    source streams them (`texts`), a small one may list them (`documents`)."""

    config: LanguageModelDataConfig
    name: str

    def __init__(self) -> None:
        super().__init__()
        self.splits: dict[str, Any] = {}
        self.collate_fn = _as_batch
        # Mean UTF-8 bytes per predicted token of each evaluation span (for bits per byte).
        self.bytes_per_token: dict[str, float] = {}

    @property
    def eval_suffixes(self) -> list[str]:  # type: ignore[override]
        """ "" for the training context, "@<n>" for every other evaluation length."""
        return ["", *(f"@{n}" for n in self.config.lengths[1:])]

    def texts(self, split: str) -> Iterator[str]:
        """The documents of `split`, streamed, in a fixed order: what the build reads."""
        return iter(self.documents()[split])

    def documents(self) -> dict[str, list[str]]:
        """The texts of each split (train, val, test) in memory: for small corpora and tests.
        Subclasses override this or `texts`."""
        return {split: list(self.texts(split)) for split in SPLITS}

    def source_facts(self) -> list[Any]:
        """What identifies the source (e.g. the Python version), for the fingerprint."""
        raise NotImplementedError

    def fingerprint(self) -> str:
        config = self.config
        facts = [*self.source_facts(), config.vocab_size, config.val_fraction]
        facts += [config.test_fraction, "byte-bpe-v1"]
        return hashlib.sha1(json.dumps(facts).encode()).hexdigest()[:12]

    def cache_dir(self) -> Path:
        return Path(self.config.data_dir) / self.name / self.fingerprint()

    def tokenizer(self) -> Any:
        """The trained tokenizer (building the cache first if needed)."""
        path = self.cache_dir() / "tokenizer.json"
        if not path.is_file():
            self.streams()
        return byte_level_bpe(path, [], self.config.vocab_size)

    def streams(self) -> dict[str, TokenStream]:
        """One memory-mapped token stream per split, built and cached on first use."""
        folder = self.cache_dir()
        streams = read_streams(folder)
        if streams is not None:
            return streams
        texts = self.texts("train")
        tokenizer = byte_level_bpe(folder / "tokenizer.json", texts, self.config.vocab_size)
        end = tokenizer.token_to_id(BYTE_LEVEL_SPECIAL[1])
        # Generators: each split is read only when the writer reaches it.
        return write_streams(folder, tokenizer, {split: self.texts(split) for split in SPLITS}, end)

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        config, streams = self.config, self.streams()
        train = Windows(streams["train"], config.context, len(streams["train"]) - 1)
        if config.max_train_windows and len(train) > config.max_train_windows:
            # Evenly spread over the stream, so a small run still sees every part of it.
            keep = torch.linspace(0, len(train) - 1, config.max_train_windows).long()
            train = Windows(train.stream, train.length, train.span, keep)
        self.splits["train"] = train
        tokenizer = self.tokenizer()
        longest = max(config.lengths)
        for split in ("val", "test"):
            stream = streams[split]
            span = min(config.eval_tokens, len(stream) - 1) // longest * longest
            if span <= 0:
                raise ValueError(
                    f"data: the {split} split has {len(stream)} tokens, fewer than the longest "
                    f"evaluation length + 1 ({longest + 1}); use a larger corpus or shorter lengths"
                )
            self.splits[split] = [Windows(stream, n, span) for n in config.lengths]
            text = tokenizer.decode(stream[1 : span + 1].tolist())
            self.bytes_per_token[split] = len(text.encode("utf-8")) / span

    def _loader(self, split: str) -> DataLoader | list[DataLoader]:
        """Evaluation batches hold about as many tokens at every length as training's do."""
        if split == "train":
            return super()._loader(split)
        config = self.config
        return [
            self._one_loader(split, dataset, max(1, config.batch_size * config.context // n))
            for dataset, n in zip(self.splits[split], config.lengths, strict=True)
        ]


class Windows(Dataset):
    """Non-overlapping windows of `length` + 1 tokens (stride `length`) predicting tokens
    1..span of a stream: window i starts at token i * length, each read from the memory-mapped
    stream when asked for. `keep` (window numbers) keeps only those windows, in that order."""

    def __init__(
        self, stream: TokenStream, length: int, span: int, keep: torch.Tensor | None = None
    ) -> None:
        self.stream, self.length, self.span, self.keep = stream, length, max(span, 0), keep

    def __len__(self) -> int:
        return len(self.keep) if self.keep is not None else self.span // self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        if not 0 <= index < len(self):
            raise IndexError(f"window {index} of {len(self)}")
        window = int(self.keep[index]) if self.keep is not None else index
        start = window * self.length
        return torch.from_numpy(self.stream[start : start + self.length + 1].astype(np.int64))


def _as_batch(items: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"input_ids": torch.stack(items)}
