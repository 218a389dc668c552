"""Token streams for causal language modelling, and how every length is evaluated alike.

Each split's documents are tokenized with a byte-level BPE tokenizer trained on the train split,
joined into one stream with an end-of-document token between them, and cached under
`data_dir/<name>/<fingerprint>/` (the fingerprint covers the source and every build parameter).
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
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from research.data.base import SplitDataModule
from research.data.configs import LanguageModelDataConfig
from research.data.tokenizer import BYTE_LEVEL_SPECIAL, byte_level_bpe
from research.utils.atomic import replacing

SPLITS = ("train", "val", "test")


class LanguageModelDataModule(SplitDataModule):
    """Subclasses set `config` and `name` and say which documents each split holds."""

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

    def documents(self) -> dict[str, list[str]]:
        """The texts of each split (train, val, test)."""
        raise NotImplementedError

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

    def streams(self) -> dict[str, torch.Tensor]:
        """One token stream per split, built and cached on first use."""
        folder = self.cache_dir()
        path = folder / "tokens.pt"
        if path.is_file():
            return torch.load(path, weights_only=True)
        documents = self.documents()
        tokenizer = byte_level_bpe(
            folder / "tokenizer.json", documents["train"], self.config.vocab_size
        )
        end = tokenizer.token_to_id(BYTE_LEVEL_SPECIAL[1])
        streams = {}
        for split in SPLITS:
            ids: list[int] = []
            for encoding in tokenizer.encode_batch(documents[split]):
                ids.extend(encoding.ids)
                ids.append(end)
            streams[split] = torch.tensor(ids, dtype=torch.int32)
        with replacing(path, durable=False) as partial:
            torch.save(streams, partial)
        return streams

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        config, streams = self.config, self.streams()
        train = _windows(streams["train"].long(), config.context, len(streams["train"]) - 1)
        if config.max_train_windows and len(train) > config.max_train_windows:
            # Evenly spread over the stream, so a small run still sees every part of it.
            keep = torch.linspace(0, len(train) - 1, config.max_train_windows).long()
            train = train[keep]
        self.splits["train"] = TensorDataset(train)
        tokenizer = self.tokenizer()
        longest = max(config.lengths)
        for split in ("val", "test"):
            stream = streams[split].long()
            span = min(config.eval_tokens, len(stream) - 1) // longest * longest
            if span == 0:
                raise ValueError(
                    f"data: the {split} split has {len(stream)} tokens, fewer than the longest "
                    f"evaluation length + 1 ({longest + 1}); use a larger corpus or shorter lengths"
                )
            self.splits[split] = [TensorDataset(_windows(stream, n, span)) for n in config.lengths]
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


def _windows(stream: torch.Tensor, length: int, span: int) -> torch.Tensor:
    """Non-overlapping windows of `length` + 1 tokens (stride `length`) predicting tokens
    1..span of the stream: (span // length, length + 1)."""
    return stream[: span // length * length + 1].unfold(0, length + 1, length)


def _as_batch(items: list[tuple[torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {"input_ids": torch.stack([item[0] for item in items])}
