"""Causal-LM token streams: the stdlib source corpus and any HF text dataset on local files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from research.data.hf_lm import HFLanguageModelDataModule
from research.data.stdlib_code import StdlibCodeDataModule, stdlib_files

SMALL = {"max_files": 60, "vocab_size": 400, "context": 16, "eval_lengths": [32, 64]}


@pytest.fixture(scope="module")
def stdlib(tmp_path_factory: pytest.TempPathFactory) -> StdlibCodeDataModule:
    module = StdlibCodeDataModule(data_dir=str(tmp_path_factory.mktemp("d")), **SMALL)
    module.setup()
    return module


def test_corpus_is_every_stdlib_source_file():
    paths = [path for path, _ in stdlib_files()]
    assert (
        len(paths) > 1000 and "json/decoder.py" in paths and "test/test_json/__init__.py" in paths
    )
    assert not any("site-packages" in path for path in paths)


def test_split_by_file_is_deterministic_and_disjoint(stdlib: StdlibCodeDataModule):
    documents = stdlib.documents()
    assert sum(len(texts) for texts in documents.values()) == 60
    assert documents["train"] and documents["val"] and documents["test"]
    assert not set(documents["train"]) & (set(documents["val"]) | set(documents["test"]))
    assert documents == StdlibCodeDataModule(**SMALL).documents()


def test_byte_level_tokenizer_round_trips_code(stdlib: StdlibCodeDataModule):
    tokenizer = stdlib.tokenizer()
    source = stdlib.documents()["val"][0][:2000]
    assert tokenizer.decode(tokenizer.encode(source).ids) == source  # whitespace and case kept
    assert tokenizer.get_vocab_size() == 400


def test_every_length_scores_the_same_held_out_tokens(stdlib: StdlibCodeDataModule):
    assert stdlib.eval_suffixes == ["", "@32", "@64"]
    stream = stdlib.streams()["test"].long()
    targets = []
    for length, dataset in zip([16, 32, 64], stdlib.splits["test"], strict=True):
        windows = dataset.tensors[0]
        assert windows.shape[1] == length + 1
        assert torch.equal(windows[1:, 0], windows[:-1, -1])  # stride = length, no gap
        targets.append(windows[:, 1:].flatten())
    assert torch.equal(targets[0], targets[1]) and torch.equal(targets[0], targets[2])
    assert torch.equal(targets[0], stream[1 : len(targets[0]) + 1])
    assert len(targets[0]) % 64 == 0 and 1.5 < stdlib.bytes_per_token["test"] < 8


def test_loaders_keep_tokens_per_batch_and_train_windows_predict_the_next_token(
    stdlib: StdlibCodeDataModule,
):
    loaders = stdlib.test_dataloader()
    assert [loader.batch_size for loader in loaders] == [32, 16, 8]
    batch = next(iter(stdlib.train_dataloader()))
    assert batch["input_ids"].shape == (32, 17)


def test_build_is_cached_and_fingerprinted(stdlib: StdlibCodeDataModule, monkeypatch):
    tokens = stdlib.cache_dir() / "tokens.pt"
    stamp = tokens.stat().st_mtime
    again = StdlibCodeDataModule(data_dir=stdlib.config.data_dir, **{**SMALL, "context": 32})
    again.setup()  # another context or lengths reuse the same streams
    assert again.cache_dir() == stdlib.cache_dir() and tokens.stat().st_mtime == stamp
    other = StdlibCodeDataModule(data_dir=stdlib.config.data_dir, **{**SMALL, "vocab_size": 500})
    assert other.fingerprint() != stdlib.fingerprint()
    before = stdlib.fingerprint()
    monkeypatch.setattr("platform.python_version", lambda: "3.99.0")
    assert stdlib.fingerprint() != before


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"eval_lengths": [32, 48]}, "must each divide the longest \\(48\\)"),
        ({"eval_tokens": 32}, "eval_tokens=32 must be >= the longest length 64"),
        ({"vocab_size": 100}, "vocab_size=100 is out of range"),
    ],
)
def test_bad_lengths_fail_in_one_line(params: dict, message: str):
    with pytest.raises(ValueError, match=message) as err:
        StdlibCodeDataModule(**{**SMALL, **params})
    assert "\n" not in str(err.value)


def test_hf_text_on_local_files(tmp_path: Path):
    rows = [{"text": f"def f{i}(x):\n    return x * {i} + {i % 7}\n"} for i in range(300)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    module = HFLanguageModelDataModule(
        name="json",
        subset=None,
        data_files={"train": str(tmp_path / "train.jsonl")},
        data_dir=str(tmp_path / "d"),
        vocab_size=300,
        context=8,
        eval_lengths=[16],
        eval_tokens=64,
        val_fraction=0.2,
        test_fraction=0.2,
    )
    module.setup()
    documents = module.documents()
    assert sum(len(t) for t in documents.values()) == 300 and len(documents["val"]) > 20
    assert module.eval_suffixes == ["", "@16"]
    assert [len(d) for d in module.splits["val"]] == [8, 4]  # 64 tokens at 8 and at 16
    assert list((tmp_path / "d" / "hf_lm").glob("*/tokenizer.json"))
    with pytest.raises(ValueError, match="text_field='body' is not a column"):
        HFLanguageModelDataModule(
            name="json", subset=None, data_files=str(tmp_path / "train.jsonl"), text_field="body"
        ).documents()
