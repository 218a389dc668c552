"""Token streams on disk: written in chunks, read back memory-mapped, so neither building nor
training holds a whole corpus in memory.

A build is two files in its cache folder. `tokens.bin` is every split's stream, one after the
other, as raw little-endian integers of the smallest type that holds the vocabulary (uint16 up to
65,536 tokens, else uint32). `tokens.json` says where each split lies and in which type:
`{"dtype": "<u2", "vocab_size": 8000, "splits": {"train": {"offset": 0, "tokens": N}, ...}}`
(the dtype in numpy's notation; offset and length counted in tokens). Each file is written under
a temporary name and renamed when whole, `tokens.json` last: a build killed at any point leaves
no `tokens.json`, so it is never taken for complete.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from research.utils.atomic import replacing, write_json_atomic

BIN, INDEX = "tokens.bin", "tokens.json"
# Characters of text encoded per call: large enough for the Rust batch encoder to use every core,
# small enough that the chunk and its encodings stay a few tens of MB whatever the corpus size.
CHUNK_CHARS = 1 << 20


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned type that holds every id below `vocab_size`, little-endian."""
    return np.dtype("<u2" if vocab_size <= 1 << 16 else "<u4")


class TokenStream:
    """One split's tokens in `tokens.bin`, sliced like an array (a numpy view of the file).

    The memory map is opened on first use in each process and never pickled, so DataLoader
    workers each map the file themselves instead of receiving a copy of the tokens."""

    def __init__(self, path: Path, dtype: str, offset: int, size: int) -> None:
        self.path, self.dtype, self.offset, self.size = path, np.dtype(dtype), offset, size
        self._array: np.ndarray | None = None

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: Any) -> np.ndarray:
        if self._array is None:
            if self.size == 0:  # mmap refuses an empty region
                self._array = np.empty(0, self.dtype)
            else:
                mapped = np.memmap(
                    self.path,
                    self.dtype,
                    mode="r",
                    offset=self.offset * self.dtype.itemsize,
                    shape=(self.size,),
                )
                self._array = np.asarray(mapped)  # a plain view slices 3x faster than a memmap
        return self._array[index]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_array": None}


def read_streams(folder: Path) -> dict[str, TokenStream] | None:
    """The streams of a complete build in `folder`, or None if there is none."""
    index = folder / INDEX
    if not index.is_file():
        return None
    return _streams(folder, json.loads(index.read_text(encoding="utf-8")))


def _streams(folder: Path, meta: dict[str, Any]) -> dict[str, TokenStream]:
    return {
        split: TokenStream(folder / BIN, meta["dtype"], part["offset"], part["tokens"])
        for split, part in meta["splits"].items()
    }


def write_streams(
    folder: Path, tokenizer: Any, texts: dict[str, Iterable[str]], end_id: int
) -> dict[str, TokenStream]:
    """Encode each split's documents (an end-of-document id after each) into `folder`."""
    vocab_size = tokenizer.get_vocab_size()
    dtype = token_dtype(vocab_size)
    splits, offset = {}, 0
    with replacing(folder / BIN, durable=False) as partial, partial.open("wb") as out:
        for split, documents in texts.items():
            size = 0
            for ids in _encoded(tokenizer, documents, end_id, dtype):
                out.write(ids.tobytes())
                size += len(ids)
            splits[split], offset = {"offset": offset, "tokens": size}, offset + size
    meta = {"dtype": dtype.str, "vocab_size": vocab_size, "splits": splits}
    write_json_atomic(folder / INDEX, meta, durable=False)
    return _streams(folder, meta)


def _encoded(
    tokenizer: Any, documents: Iterable[str], end_id: int, dtype: np.dtype
) -> Iterator[np.ndarray]:
    """The ids of `documents`, one array per chunk of about CHUNK_CHARS characters."""
    for chunk in _chunks(documents):
        encodings = tokenizer.encode_batch_fast(chunk)  # parallel in Rust, no offsets
        count = sum(len(encoding.ids) + 1 for encoding in encodings)
        ids = chain.from_iterable(chain(encoding.ids, (end_id,)) for encoding in encodings)
        yield np.fromiter(ids, dtype, count)


def _chunks(documents: Iterable[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    chars = 0
    for text in documents:
        chunk.append(text)
        chars += len(text)
        if chars >= CHUNK_CHARS:
            yield chunk
            chunk, chars = [], 0
    if chunk:
        yield chunk
