"""The stdlib docstring corpus: real text, a locally trained tokenizer, a cached build."""

from __future__ import annotations

import pytest

from research.data.stdlib_text import StdlibTextDataModule, split_of, stdlib_docstrings


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> StdlibTextDataModule:
    module = StdlibTextDataModule(data_dir=str(tmp_path_factory.mktemp("d")), vocab_size=2000)
    module.setup()
    return module


@pytest.mark.slow  # reads the whole stdlib: about 6 s
def test_corpus_is_the_stdlib_docstrings():
    docs = stdlib_docstrings()
    modules = {module for module, _ in docs}
    assert len(docs) > 2000 and {"json", "pathlib", "collections"} <= modules
    assert not any(module.startswith("test") for module in modules)


@pytest.mark.slow  # shares the stdlib build: about 7 s
def test_blocks_tokenizer_and_split_by_module(built: StdlibTextDataModule):
    sizes = {split: len(data) for split, data in built.splits.items()}
    assert sizes["train"] > sizes["val"] > 0 and sizes["test"] > 0
    batch = next(iter(built.train_dataloader()))
    assert batch["input_ids"].shape == (32, 128)
    assert (batch["input_ids"][:, 0] == built.tokenizer().token_to_id("[CLS]")).all()
    text = built.tokenizer().decode(batch["input_ids"][0, 1:40].tolist())
    assert len(text.split()) > 10
    assert split_of("json", 0.1, 0.1) == split_of("json", 0.1, 0.1)


@pytest.mark.slow  # shares the stdlib build: about 7 s
def test_build_is_cached_and_fingerprinted(built: StdlibTextDataModule):
    cache = built.cache_dir
    assert (cache / "tokenizer.json").is_file() and (cache / "blocks.pt").is_file()
    stamp = (cache / "blocks.pt").stat().st_mtime
    again = StdlibTextDataModule(data_dir=built.config.data_dir, vocab_size=2000)
    again.setup()
    assert again.cache_dir == cache and (cache / "blocks.pt").stat().st_mtime == stamp
    other = StdlibTextDataModule(data_dir=built.config.data_dir, vocab_size=3000)
    assert other.fingerprint != built.fingerprint


def test_fingerprint_changes_with_the_python_version(monkeypatch: pytest.MonkeyPatch):
    module = StdlibTextDataModule(vocab_size=2000)
    before = module.fingerprint
    monkeypatch.setattr("platform.python_version", lambda: "3.99.0")
    assert module.fingerprint != before
