"""The stdlib code-search task: CodeSearchNet's recipe on the running Python's own source."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from research.config.errors import ConfigError
from research.config.schema import check_node
from research.data import codesearch
from research.data.beir import load_beir_folder
from research.data.codesearch import (
    StdlibCodeSearchDataModule,
    _document,
    build_stdlib_codesearch,
    fingerprint,
    summary,
)
from research.data.configs import BEIRDataConfig, StdlibCodeSearchConfig


@pytest.fixture(scope="module")
def built(shared_data_dir: Path) -> StdlibCodeSearchDataModule:
    """The full build (it parses the whole stdlib), in the session's data folder: built once,
    for this file and the end-to-end retrieval runs alike."""
    module = StdlibCodeSearchDataModule(data_dir=str(shared_data_dir), batch_size=8)
    module.setup()
    return module


def _module_of(function_id: str) -> str:
    return function_id.split(":")[0].split(".")[0]


@pytest.mark.slow  # shares a build over the whole stdlib of about 10 s
def test_split_by_module_with_the_configured_fractions(built: StdlibCodeSearchDataModule):
    folder = Path(str(built.path))
    modules = {}
    for split in ("train", "val", "test"):
        modules[split] = {_module_of(q) for q in load_beir_folder(folder, split).qrels}
    assert not modules["train"] & modules["val"] and not modules["train"] & modules["test"]
    assert not modules["val"] & modules["test"]
    sizes = {split: len(load_beir_folder(folder, split).queries) for split in modules}
    total = sum(sizes.values())
    assert total > 2000 and all(0.07 < sizes[s] / total < 0.13 for s in ("val", "test"))


def _all_queries(folder: Path) -> dict[str, str]:
    splits = [load_beir_folder(folder, split) for split in ("train", "val", "test")]
    return {query: text for split in splits for query, text in split.queries.items()}


@pytest.mark.slow  # shares a build over the whole stdlib of about 10 s
def test_documents_are_functions_without_docstrings(built: StdlibCodeSearchDataModule):
    corpus, queries = built.source.corpus, _all_queries(Path(str(built.path)))
    assert sorted(corpus) == sorted(queries)  # one query per function
    assert len(corpus) == len(set(corpus.values()))  # no exact duplicates
    for doc_id, text in corpus.items():
        (function,) = ast.parse(text).body  # dedented: the def parses on its own
        assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        qualname = doc_id.split(":")[1]
        assert qualname.split(".")[-1] == function.name and not function.name.startswith("_")
        for node in ast.walk(function):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                assert ast.get_docstring(node) is None, doc_id
        assert len(queries[doc_id].split()) >= 3


@pytest.mark.slow  # shares a build over the whole stdlib of about 10 s
def test_queries_are_docstring_summaries(built: StdlibCodeSearchDataModule):
    import json

    queries = _all_queries(Path(str(built.path)))
    (dumps,) = [q for q in queries if q.startswith("json:dumps:")]
    first_paragraph = inspect.cleandoc(json.dumps.__doc__).split("\n\n")[0]
    assert queries[dumps] == " ".join(first_paragraph.split())
    assert "\n" not in "".join(queries.values())


@pytest.mark.slow
def test_build_is_deterministic(built: StdlibCodeSearchDataModule, tmp_path: Path):
    sizes = build_stdlib_codesearch(tmp_path / "again")
    names = ["corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/val.tsv", "qrels/test.tsv"]
    for name in names:
        first, again = Path(str(built.path)) / name, tmp_path / "again" / name
        assert again.read_bytes() == first.read_bytes()
    assert sizes == {s: len(load_beir_folder(tmp_path / "again", s).queries) for s in sizes}


@pytest.mark.slow  # shares a build over the whole stdlib of about 10 s
def test_second_setup_reuses_the_build(built: StdlibCodeSearchDataModule, monkeypatch):
    corpus = Path(str(built.path)) / "corpus.jsonl"
    stamp = corpus.stat().st_mtime_ns

    def fail(*args, **kwargs):
        raise AssertionError("rebuilt although cached")

    monkeypatch.setattr(codesearch, "build_stdlib_codesearch", fail)
    again = StdlibCodeSearchDataModule(data_dir=built.config.data_dir, max_eval_queries=5)
    again.setup()
    assert again.path == built.path and corpus.stat().st_mtime_ns == stamp
    assert len(again.retrieval_split("test").queries) == 5
    other = StdlibCodeSearchDataModule(data_dir=built.config.data_dir, min_code_lines=3)
    with pytest.raises(AssertionError, match="rebuilt"):
        other.setup()


@pytest.mark.slow  # shares a build over the whole stdlib of about 10 s
def test_another_partition_deals_the_modules_anew(built: StdlibCodeSearchDataModule):
    functions = [
        codesearch.CodeFunction(doc_id, _module_of(doc_id), "", text)
        for doc_id, text in built.source.corpus.items()
    ]
    first = codesearch.module_splits(functions, 0.1, 0.1)
    second = codesearch.module_splits(functions, 0.1, 0.1, partition=1)
    test_of = {
        name: {m for m, s in splits.items() if s == "test"}
        for name, splits in {"first": first, "second": second}.items()
    }
    assert test_of["first"] and test_of["second"] and not test_of["first"] & test_of["second"]
    counts = {split: sum(second[f.module] == split for f in functions) for split in ("val", "test")}
    assert all(0.07 < n / len(functions) < 0.13 for n in counts.values())
    folder = Path(str(built.path))
    assert first == {  # partition 0 is the split the build wrote (and its cache)
        _module_of(q): split
        for split in ("train", "val", "test")
        for q in load_beir_folder(folder, split).qrels
    }


def test_fingerprint_covers_the_python_version_and_parameters(monkeypatch):
    config = StdlibCodeSearchConfig()
    before = fingerprint(config)
    assert fingerprint(replace(config, min_code_lines=3)) != before
    assert fingerprint(replace(config, val_fraction=0.2)) != before
    assert fingerprint(replace(config, partition=1)) != before
    assert fingerprint(replace(config, n_negatives=4, eval_corpus="full")) == before
    monkeypatch.setattr("platform.python_version", lambda: "3.99.0")
    assert fingerprint(config) != before


@pytest.mark.slow  # shares a build over the whole stdlib of about 10 s
def test_train_batches_and_per_split_search(built: StdlibCodeSearchDataModule):
    folder = Path(str(built.path))
    train, test = load_beir_folder(folder, "train"), load_beir_folder(folder, "test")
    batch = next(iter(built.train_dataloader()))
    assert len(batch["queries"]) == 8 and len(batch["documents"]) == 16
    train_texts = set(train.corpus.values())
    for i in range(8):
        positive, negative = batch["documents"][2 * i : 2 * i + 2]
        assert positive != negative and {positive, negative} <= train_texts
    assert set(built.retrieval_split("test").corpus) == {d for q in test.qrels.values() for d in q}


SOURCE = '''
class Box:
    def get_item(self, key):
        """Return the item stored under key.

        More detail that is not part of the summary.
        """

        def helper():
            """Nested docstring, removed too."""
            return key

        value = self.items[key]  # look it up
        return helper() or value

    def short(self):
        """One line of code after the docstring is too little."""
        return 1

    def inline(self): "Docstring on the def line"; return 2
'''


def test_summary_and_document_on_a_small_source():
    tree, lines = ast.parse(SOURCE), SOURCE.splitlines()
    get_item, short, inline = tree.body[0].body
    assert summary(ast.get_docstring(get_item)) == "Return the item stored under key."
    document = _document(get_item, lines, 2)
    assert document == textwrap.dedent("""\
        def get_item(self, key):

            def helper():
                return key

            value = self.items[key]  # look it up
            return helper() or value""")
    assert _document(short, lines, 2) is None and _document(inline, lines, 1) is None


FORM_FED = (
    "\f\n"  # a page break between sections, as in Python 3.10's email package
    "def decode(string):\n"
    '    """Decode a MIME header \u2014 one line.\f\n'
    "\n"
    '    Not a full header.\u00e9"""\n'
    "    if not string:\n"
    "        return b''\n"
    "    return string.encode()\n"
)


def test_line_numbers_hold_across_form_feeds_and_non_ascii_docstrings():
    """ast counts lines at newlines only and columns in UTF-8 bytes; a form feed (which
    `str.splitlines` splits at) or a non-ASCII docstring must not move the cut."""
    (function,) = ast.parse(FORM_FED).body
    document = _document(function, codesearch.source_lines(FORM_FED), 2)
    assert document == "def decode(string):\n    if not string:\n        return b''\n" + (
        "    return string.encode()"
    )
    (parsed,) = ast.parse(document).body  # the def on its own, docstring gone
    assert ast.get_docstring(parsed) is None
    shared = 'def f(x):\n    """' + "\u00e9" * 12 + '."""; y = x\n    return y\n'
    (function,) = ast.parse(shared).body
    assert _document(function, codesearch.source_lines(shared), 1) is None  # code after it


def test_schema_errors_are_one_line():
    for node, words in [
        ({"val_fraction": 0.6, "test_fraction": 0.5}, "data.val_fraction=0.6 plus test_fraction"),
        ({"eval_corpus": "some"}, "data.eval_corpus='some' is not valid; choose one of: full"),
        ({"min_query_words": 0}, "data.min_query_words=0 is out of range"),
        ({"path": "x"}, "data.path is not an option"),
    ]:
        with pytest.raises(ConfigError) as err:
            check_node("data", node, StdlibCodeSearchConfig)
        assert words in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="give exactly one.*neither is set$"):
        check_node("data", {"name": None}, BEIRDataConfig)
    check_node("data", {"path": "folder", "name": None, "n_negatives": 3}, BEIRDataConfig)
