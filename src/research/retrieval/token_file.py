"""Token matrices too large to hold twice: an append-only fp16 [n, D] file on disk, read back
block by block, and a safetensors writer that streams its tensors in chunks.

The PLAID build (plaid.py) writes every added document's tokens here as they arrive and reads
them back a block at a time to train and encode, so no copy of all the tokens in float is ever
held. Blocks are read with plain file reads, not a memory map: pages read through a map count in
the process's resident memory until unmapped, so a map read end to end would cost the file's size
in RSS. `safetensors.torch.save_file` first copies every tensor into one bytes object; the
writer here keeps memory to one chunk. The format (safetensors' spec): an 8-byte little-endian
header size, a JSON header (dtype, shape and byte range of each tensor), then the data.
"""

from __future__ import annotations

import json
import mmap
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import Tensor

# Bytes written or read per chunk (~16 MB): memory stays at one chunk, the syscalls few.
CHUNK_BYTES = 16 * 2**20
SAFETENSORS_DTYPES = {
    torch.float16: "F16",
    torch.float32: "F32",
    torch.int32: "I32",
    torch.int64: "I64",
    torch.uint8: "U8",
}


class TokenFile:
    """fp16 token rows in an unnamed temporary file (under $TMPDIR; the OS deletes it when the
    last reference goes): appended block by block, read by row range."""

    dtype = torch.float16

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.rows = 0
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - open as long as its owner

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.dim)

    def append(self, tokens: Tensor) -> None:
        """Write `tokens` [n, dim] (any float dtype) as fp16 after the rows already held."""
        half = tokens.detach().to(torch.float16).contiguous()
        self._file.seek(0, os.SEEK_END)
        self._file.write(half.view(torch.uint8).numpy().data)
        self.rows += len(half)

    def read(self, start: int, stop: int) -> Tensor:
        """Rows start..stop - 1 as a new fp16 tensor."""
        rows = torch.empty(stop - start, self.dim, dtype=torch.float16)
        self._file.flush()
        self._file.seek(start * self.dim * 2)
        self._file.readinto(rows.view(torch.uint8).numpy().data)
        return rows

    def blocks(self, start: int, stop: int, size: int) -> Iterator[Tensor]:
        """Rows start..stop - 1, `size` rows at a time."""
        for first in range(start, stop, size):
            yield self.read(first, min(first + size, stop))

    def gather(self, rows: Tensor, size: int) -> Tensor:
        """`rows` (in any order), read in one pass over the file, `size` rows at a time."""
        if not len(rows):
            return torch.empty(0, self.dim, dtype=torch.float16)
        ordered, order = rows.sort()
        stop = int(ordered[-1]) + 1
        picked = []
        for first, block in zip(range(0, stop, size), self.blocks(0, stop, size), strict=True):
            inside = ordered[(ordered >= first) & (ordered < first + len(block))]
            picked.append(block[inside - first])
        return torch.cat(picked)[order.argsort()]

    def mapped(self) -> Tensor:
        """All rows as a read-only-in-effect tensor over a copy-on-write memory map: a search
        reads only the pages of the rows it gathers."""
        self._file.flush()
        mapped = mmap.mmap(self._file.fileno(), self.rows * self.dim * 2, access=mmap.ACCESS_COPY)
        return torch.frombuffer(mapped, dtype=torch.float16).view(self.rows, self.dim)


def chunks(source: Tensor | TokenFile) -> Iterator[Tensor]:
    """`source`'s data in row order, about CHUNK_BYTES at a time."""
    if isinstance(source, TokenFile):
        yield from source.blocks(0, source.rows, max(1, CHUNK_BYTES // (2 * source.dim)))
        return
    flat = source.reshape(-1)
    yield from flat.split(max(1, CHUNK_BYTES // max(1, flat.element_size())))


def write_safetensors(path: Path, tensors: dict[str, Tensor | TokenFile]) -> None:
    """Save `tensors` as a safetensors file, chunk by chunk. Written beside `path` and renamed
    over it, so saving over a file this process has memory-mapped is safe."""
    header, offset = {}, 0
    for name, tensor in tensors.items():
        size = torch.Size(tensor.shape).numel() * torch.empty(0, dtype=tensor.dtype).element_size()
        header[name] = {
            "dtype": SAFETENSORS_DTYPES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as handle:
        handle.write(len(encoded).to_bytes(8, "little") + encoded)
        for tensor in tensors.values():
            for chunk in chunks(tensor):
                handle.write(chunk.contiguous().view(torch.uint8).numpy().data)
    os.replace(partial, path)
