"""TokenFile (fp16 rows on disk, read back by block) and the chunked safetensors writer."""

from __future__ import annotations

import torch
from safetensors.torch import load_file

from research.retrieval.plaid import memory_mapped
from research.retrieval.token_file import TokenFile, write_safetensors


def test_rows_appended_in_blocks_read_back_by_range_gather_and_map():
    rows = torch.randn(50, 8)
    file = TokenFile(8)
    for block in rows.split(7):
        file.append(block)
    half = rows.half()
    assert file.shape == (50, 8)
    assert torch.equal(file.read(10, 23), half[10:23])
    assert torch.equal(torch.cat(list(file.blocks(5, 50, 6))), half[5:])
    picked = torch.tensor([17, 0, 49, 3, 18])
    assert torch.equal(file.gather(picked, 4), half[picked])
    assert torch.equal(file.mapped(), half)


def test_write_safetensors_streams_tensors_and_token_files(tmp_path, monkeypatch):
    monkeypatch.setattr("research.retrieval.token_file.CHUNK_BYTES", 40)  # many chunks
    file = TokenFile(4)
    file.append(torch.randn(30, 4))
    tensors = {
        "codes": torch.randint(0, 255, (9, 5), dtype=torch.uint8),
        "offsets": torch.arange(11),
        "centroids": torch.randn(3, 4),
        "ids": torch.arange(7, dtype=torch.int32),
    }
    write_safetensors(tmp_path / "a.safetensors", {**tensors, "tokens": file})
    loaded = load_file(tmp_path / "a.safetensors")
    assert sorted(loaded) == sorted([*tensors, "tokens"])
    assert all(torch.equal(loaded[name], tensor) for name, tensor in tensors.items())
    assert torch.equal(loaded["tokens"], file.read(0, 30))
    assert [p.name for p in tmp_path.iterdir()] == ["a.safetensors"]


def test_saving_over_a_mapped_file_leaves_the_map_readable(tmp_path):
    path = tmp_path / "t.safetensors"
    write_safetensors(path, {"tokens": torch.ones(6, 4).half()})
    mapped = memory_mapped(path, "tokens")
    write_safetensors(path, {"tokens": torch.zeros(2, 4).half()})
    assert torch.equal(mapped, torch.ones(6, 4).half())
    assert torch.equal(memory_mapped(path, "tokens"), torch.zeros(2, 4).half())
