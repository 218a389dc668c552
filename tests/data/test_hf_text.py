"""hf_text on local JSON-lines files, loaded through the real `datasets.load_dataset`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from research.data.hf_text import HFTextDataModule

WORDS = ["alpha", "beta", "gamma", "delta", "market", "match", "goal", "stock"]


def _write(path: Path, n: int) -> None:
    rows = [
        {"text": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(3 + i % 20)), "label": i % 4}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    _write(tmp_path / "train.jsonl", 200)
    _write(tmp_path / "test.jsonl", 40)
    return {"train": str(tmp_path / "train.jsonl"), "test": str(tmp_path / "test.jsonl")}


def test_local_files_load_tokenize_and_split(files: dict[str, str], tmp_path: Path):
    module = HFTextDataModule(
        name="json", data_files=files, vocab_size=200, max_len=16, data_dir=str(tmp_path / "d")
    )
    module.setup()
    assert {k: len(v) for k, v in module.splits.items()} == {"train": 180, "val": 20, "test": 40}
    batch = next(iter(module.train_dataloader()))
    assert batch["input_ids"].shape == (32, 16)
    assert (batch["input_ids"][:, 0] == 2).all()  # [CLS]
    lengths = batch["attention_mask"].sum(1)
    assert ((batch["input_ids"] != 0).sum(1) == lengths).all()  # padding is id 0, unmasked
    assert set(batch["labels"].tolist()) <= {0, 1, 2, 3}
    assert list((tmp_path / "d" / "hf_text").glob("*/tokenizer.json"))


def test_wrong_column_or_missing_dataset_fail_in_one_line(
    files: dict[str, str], tmp_path, monkeypatch
):
    module = HFTextDataModule(
        name="json", data_files=files, text_field="body", data_dir=str(tmp_path)
    )
    with pytest.raises(
        ValueError,
        match="text_field='body' is not a column of 'json'; its columns are: text, label",
    ):
        module.setup()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = HFTextDataModule(name="no_such_dataset_xyz", data_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        missing.setup()
    assert "\n" not in str(err.value) and "data.name='no_such_dataset_xyz'" in str(err.value)


def test_a_stream_that_does_not_name_its_columns_is_checked_by_its_first_row():
    # datasets 2.18 gives a JSON stream no column names; a generator's stream has none either.
    import datasets

    from research.data.hf_load import _columns

    rows = [{"text": "alpha beta", "label": 1}]
    stream = datasets.IterableDataset.from_generator(lambda: iter(rows))
    assert stream.column_names is None
    assert _columns(stream) == ["text", "label"]
    assert _columns(datasets.IterableDataset.from_generator(lambda: iter([]))) is None
