"""Causal-LM token streams: the stdlib source corpus and any HF text dataset on local files."""

from __future__ import annotations

import json
import pickle
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


@pytest.mark.slow  # reads every stdlib source file: about 3 s
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
    stream = torch.from_numpy(stdlib.streams()["test"][:].astype("int64"))
    targets = []
    for length, dataset in zip([16, 32, 64], stdlib.splits["test"], strict=True):
        windows = torch.stack(list(dataset))
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
    tokens = stdlib.cache_dir() / "tokens.bin"
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


def _old_way(module: StdlibCodeDataModule) -> dict[str, torch.Tensor]:
    """The streams as they were built before the memory-mapped cache: every split's ids in one
    Python list, then one tensor."""
    tokenizer, documents = module.tokenizer(), module.documents()
    end = tokenizer.token_to_id("<|endoftext|>")
    streams = {}
    for split, texts in documents.items():
        ids: list[int] = []
        for encoding in tokenizer.encode_batch(texts):
            ids += [*encoding.ids, end]
        streams[split] = torch.tensor(ids)
    return streams


@pytest.mark.slow
def test_windows_and_batches_match_the_in_memory_build(stdlib: StdlibCodeDataModule):
    old = _old_way(stdlib)
    for split, stream in stdlib.streams().items():
        assert stream.dtype == "uint16" and torch.equal(
            torch.from_numpy(stream[:].astype("int64")), old[split]
        )
    train = old["train"][: (len(old["train"]) - 1) // 16 * 16 + 1].unfold(0, 17, 16)
    assert torch.equal(torch.stack(list(stdlib.splits["train"])), train)
    few = StdlibCodeDataModule(data_dir=stdlib.config.data_dir, **SMALL, max_train_windows=50)
    few.setup()
    keep = torch.linspace(0, len(train) - 1, 50).long()
    batch = next(iter(few.train_dataloader()))["input_ids"]
    order = list(iter(few.train_dataloader().sampler))[:32]
    assert batch.dtype == torch.int64 and torch.equal(batch, train[keep][order])


@pytest.mark.slow
def test_loader_workers_map_the_file_themselves(stdlib: StdlibCodeDataModule):
    dataset = stdlib.splits["train"]
    dataset[0]  # maps the file in this process
    assert len(pickle.dumps(dataset)) < 2000  # the mapped tokens are not sent to workers
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=2)
    assert torch.equal(torch.cat(list(loader)), torch.stack(list(dataset)))


def test_local_text_files_are_streamed_with_their_own_held_out_split(tmp_path: Path):
    lines = [f"value_{i} = compute({i}, {i % 5})" for i in range(400)]
    (tmp_path / "train.txt").write_text("\n\n".join(lines[:300]))  # blank lines are left out
    (tmp_path / "valid.txt").write_text("\n".join(lines[300:350]))
    files = {"train": str(tmp_path / "train.txt"), "validation": str(tmp_path / "valid.txt")}
    params = {"name": "text", "subset": None, "data_files": files, "vocab_size": 300}
    module = HFLanguageModelDataModule(data_dir=str(tmp_path / "d"), **params, context=8)
    documents = module.documents()
    assert documents["val"] == lines[300:350] and len(documents["train"]) < 300
    assert sorted(documents["train"] + documents["test"]) == sorted(lines[:300])
    assert type(module._loaded["train"]).__name__ == "IterableDataset"  # read, never converted
    before = module.fingerprint()
    (tmp_path / "valid.txt").write_text("\n".join(lines[300:349]))
    assert HFLanguageModelDataModule(**params).fingerprint() != before


def test_a_dataset_cached_as_arrow_reads_the_same_documents(tmp_path: Path):
    rows = [{"text": f"x{i} = {i}" if i % 9 else " "} for i in range(200)]
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    streamed = HFLanguageModelDataModule(
        name="json", subset=None, data_files={"train": str(tmp_path / "corpus" / "train.jsonl")}
    )
    arrow = HFLanguageModelDataModule(name=str(tmp_path / "corpus"), subset=None)
    assert type(arrow._loaded["train"]).__name__ == "Dataset"  # no data_files: not streamed
    assert arrow.documents() == streamed.documents()
    assert sum(map(len, arrow.documents().values())) == 200 - 23  # blank rows left out
