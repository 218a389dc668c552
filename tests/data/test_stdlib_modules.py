"""Docstring -> stdlib module: labels match the source, split by name, the build is cached."""

from __future__ import annotations

import ast
import functools
import sysconfig
from pathlib import Path

import pytest
import torch

from research.data.stdlib_modules import SPLITS, StdlibModulesDataModule

_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


# Building it tokenizes the stdlib's docstrings (about 12 s): the tests that use it are slow.
@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> StdlibModulesDataModule:
    data_dir = tmp_path_factory.mktemp("d")
    module = StdlibModulesDataModule(data_dir=str(data_dir), vocab_size=2000, max_len=48)
    module.setup()
    return module


@functools.cache
def _docstrings_by_name(source: str) -> dict[str, set[str]]:
    """Every class's and function's docstring in the file of module `source`, by bare name."""
    path = Path(sysconfig.get_paths()["stdlib"], *source.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    found: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, _DEFINITIONS) and (doc := ast.get_docstring(node)):
            found.setdefault(node.name, set()).add(" ".join(doc.split()))
    return found


@pytest.mark.slow
def test_labels_are_the_module_the_docstring_is_found_in(built: StdlibModulesDataModule):
    tokenizer = built.text_corpus().tokenizer()
    cls = tokenizer.token_to_id("[CLS]")
    for split in ("val", "test"):
        data, names = built.splits[split], built.names[split]
        for ids, label, name in zip(data.sequences, data.labels, names, strict=True):
            assert built.class_names[int(label)] == name.split(".")[0].split(":")[0]
            source, qualname = name.split(":")
            docs = _docstrings_by_name(source)[qualname.split(".")[-1]]
            encoded = [[cls, *tokenizer.encode(doc).ids[:47]] for doc in docs]
            assert ids.tolist() in encoded, name


@pytest.mark.slow
def test_split_is_by_name_not_by_module(built: StdlibModulesDataModule):
    names = {split: set(built.names[split]) for split in SPLITS}
    assert not (names["train"] & names["val"] or names["train"] & names["test"])
    assert not names["val"] & names["test"]
    sizes = {split: len(built.splits[split]) for split in SPLITS}
    assert sizes["train"] > 4 * sizes["val"] > 0 and sizes["train"] > 4 * sizes["test"] > 0
    for split in SPLITS:  # every module (label) is seen in every split
        assert set(built.splits[split].labels.tolist()) == set(range(10))


@pytest.mark.slow
def test_classes_are_the_most_frequent_modules(built: StdlibModulesDataModule):
    assert built.config.num_classes == len(built.class_names) == 10
    labels = torch.cat([built.splits[split].labels for split in SPLITS])
    counts = torch.bincount(labels, minlength=10).tolist()
    assert counts == sorted(counts, reverse=True)
    assert {"asyncio", "logging", "email"} <= set(built.class_names)
    with pytest.raises(ValueError, match=r"data.num_classes=100000 .* choose at most \d+"):
        StdlibModulesDataModule(data_dir=built.config.data_dir, num_classes=100000).setup()


@pytest.mark.slow
def test_batches_start_with_cls_and_pad_to_their_longest(built: StdlibModulesDataModule):
    batch = next(iter(built.train_dataloader()))
    assert (batch["input_ids"][:, 0] == built.text_corpus().tokenizer().token_to_id("[CLS]")).all()
    lengths = batch["attention_mask"].sum(1)
    assert batch["input_ids"].shape[1] == int(lengths.max()) <= 48
    assert (batch["input_ids"][~batch["attention_mask"]] == 0).all()


@pytest.mark.slow
def test_build_is_cached_and_shares_the_corpus_tokenizer(
    built: StdlibModulesDataModule, monkeypatch: pytest.MonkeyPatch
):
    assert (built.text_corpus().cache_dir / "tokenizer.json").is_file()
    assert sorted(p.name for p in built.cache_dir.iterdir()) == ["examples.pt"]
    stamp = (built.cache_dir / "examples.pt").stat().st_mtime_ns

    def no_walk(*_: object) -> None:
        raise AssertionError("the stdlib was walked again")

    monkeypatch.setattr("research.data.stdlib_modules.stdlib_docs", no_walk)
    again = StdlibModulesDataModule(data_dir=built.config.data_dir, vocab_size=2000, max_len=48)
    again.setup()
    assert (built.cache_dir / "examples.pt").stat().st_mtime_ns == stamp
    assert again.class_names == built.class_names and again.names == built.names
    assert torch.equal(again.splits["test"].labels, built.splits["test"].labels)


def test_fingerprint_covers_the_python_version_and_parameters(monkeypatch: pytest.MonkeyPatch):
    module = StdlibModulesDataModule(vocab_size=2000)
    before = module.fingerprint
    changes = [{"num_classes": 5}, {"max_len": 64}, {"vocab_size": 3000}, {"val_fraction": 0.2}]
    others = [StdlibModulesDataModule(**{"vocab_size": 2000, **change}) for change in changes]
    assert len({before, *(other.fingerprint for other in others)}) == 5
    monkeypatch.setattr("platform.python_version", lambda: "3.99.0")
    assert module.fingerprint != before
