"""A code-search task built from the running Python's standard library, as CodeSearchNet is built.

CodeSearchNet (Husain et al. 2019, https://arxiv.org/abs/1909.09436, sec. 2.2) pairs functions
with their documentation, truncated to its first paragraph, and drops documentation shorter than
three tokens, functions shorter than three lines and duplicates. Here: the query is a public
function's docstring summary (first paragraph, at least `min_query_words` words), the document
that function without its docstring (at least `min_code_lines` lines of code besides it), from
the stdlib's own source (the files `stdlib_text` keeps), split into train/val/test by top-level
module, and written as a BEIR folder under
`data_dir/stdlib_codesearch/<fingerprint>/`: the fingerprint covers the Python version and every
build parameter, so a different Python never reuses a stale build.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from research.data.beir import RetrievalDataModule
from research.data.configs import StdlibCodeSearchConfig
from research.data.stdlib_text import definitions, stdlib_sources
from research.utils.atomic import replacing

log = logging.getLogger(__name__)

# v2: documents cut at the lines ast numbers (v1 builds on Python 3.10 were off after form feeds)
FORMAT = "stdlib-codesearch-v2"
SPLITS = ("train", "val", "test")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class CodeFunction:
    """One query/document pair; `id` is "<dotted source module>:<qualname>:<line>"."""

    id: str
    module: str
    query: str
    document: str


def summary(docstring: str) -> str:
    """The docstring's first paragraph on one line."""
    return " ".join(re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)[0].split())


def source_lines(source: str) -> list[str]:
    """The lines `ast` numbers: split at newlines only. `str.splitlines` also splits at form
    feeds and other separators, which Python 3.10's stdlib has between sections (email,
    for one), and every line number after one would then point to the wrong line."""
    return source.split("\n")  # read_text turned \r\n and \r into \n


def _docstring_lines(function: ast.AST, lines: list[str]) -> set[int] | None:
    """0-based line numbers of every docstring inside `function` (its own and nested ones), or
    None when one shares a line with code, so that removing whole lines would cut code."""
    found: set[int] = set()
    for node in ast.walk(function):
        if not isinstance(node, (*_DEFS, ast.ClassDef)) or ast.get_docstring(node) is None:
            continue
        doc = node.body[0]
        # ast's columns count UTF-8 bytes, not characters
        before = lines[doc.lineno - 1].encode()[: doc.col_offset].decode(errors="replace")
        last = lines[doc.end_lineno - 1].encode()  # type: ignore[operator]
        after = last[doc.end_col_offset :].decode(errors="replace").strip()
        if before.strip() or (after and not after.startswith("#")):
            return None
        found.update(range(doc.lineno - 1, doc.end_lineno))  # type: ignore[arg-type]
    return found


def _document(function: ast.FunctionDef, lines: list[str], min_code_lines: int) -> str | None:
    """The function from its def line (decorators left out) without docstrings, dedented to the
    def's column; None when fewer than `min_code_lines` lines of code follow the docstring."""
    dropped = _docstring_lines(function, lines)
    if dropped is None or len(function.body) < 2:
        return None
    end: int = function.end_lineno  # type: ignore[assignment]
    code = [
        number
        for number in range(function.body[1].lineno - 1, end)
        if number not in dropped and lines[number].strip()
        if not lines[number].strip().startswith("#")
    ]
    if len(code) < min_code_lines:
        return None
    column, kept = function.col_offset, []
    for number in range(function.lineno - 1, end):
        if number not in dropped:
            line = lines[number]
            kept.append(line if line[:column].strip() else line[column:])
    return "\n".join(kept).rstrip()


def stdlib_functions(config: StdlibCodeSearchConfig | None = None) -> list[CodeFunction]:
    """Every public stdlib function with a docstring summary of at least `min_query_words` words
    and at least `min_code_lines` lines of code, in source order; exact duplicate documents
    (e.g. one method copied into two classes) keep only their first occurrence; the two limits
    are `config`'s (the declared defaults when it is None)."""
    config = config or StdlibCodeSearchConfig()
    found: list[CodeFunction] = []
    seen: set[str] = set()
    for relative, source, tree in stdlib_sources():
        lines = source_lines(source)
        dotted = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
        for qualname, function in definitions(tree, ""):
            docstring = ast.get_docstring(function)
            if not isinstance(function, _DEFS) or function.name.startswith("_") or not docstring:
                continue
            query = summary(docstring)
            document = _document(function, lines, config.min_code_lines)
            if len(query.split()) < config.min_query_words or document is None or document in seen:
                continue
            seen.add(document)
            function_id = f"{dotted}:{qualname}:{function.lineno}"
            found.append(
                CodeFunction(function_id, relative.parts[0].removesuffix(".py"), query, document)
            )
    return found


def module_splits(
    functions: list[CodeFunction], val_fraction: float, test_fraction: float, partition: int = 0
) -> dict[str, str]:
    """Top-level module -> split. Modules are taken in the order of a hash of their name (salted
    by `partition`, so each partition deals them differently); each goes to test, else val, if
    that brings the split nearer its share of the functions, else to train.

    Filling by function count keeps val and test near their fractions, which a per-module hash
    bucket does not: a few modules (tkinter, distutils, email) hold 5-8% of the functions each,
    and buckets gave val/test 7%/4% of the queries here.
    """
    sizes: dict[str, int] = {}
    for function in functions:
        sizes[function.module] = sizes.get(function.module, 0) + 1
    need = {"test": test_fraction * len(functions), "val": val_fraction * len(functions)}
    splits = {}
    salt = f"{partition}:" if partition else ""  # partition 0 keeps the original order
    for module in sorted(sizes, key=lambda name: hashlib.sha1(f"{salt}{name}".encode()).digest()):
        split = next((s for s in ("test", "val") if need[s] >= sizes[module] / 2), "train")
        need[split] = need.get(split, 0.0) - sizes[module]
        splits[module] = split
    return splits


def fingerprint(config: StdlibCodeSearchConfig) -> str:
    """Names one build: the Python (its stdlib is the data), the build parameters and this
    format (the parameters that only say how the build is read are left out)."""
    facts = [platform.python_version(), config.val_fraction, config.test_fraction]
    facts += [config.min_query_words, config.min_code_lines, FORMAT]
    facts += [config.partition] if config.partition else []  # partition 0 keeps its old cache
    return hashlib.sha1(json.dumps(facts).encode()).hexdigest()[:12]


def _write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def build_stdlib_codesearch(
    folder: str | Path, config: StdlibCodeSearchConfig | None = None
) -> dict[str, int]:
    """Write the BEIR folder (corpus.jsonl, queries.jsonl, qrels/{train,val,test}.tsv) and return
    the queries per split. Built in a temporary folder beside it and renamed into place, so a
    killed or concurrent build never leaves a half-written folder behind."""
    folder, config = Path(folder), config or StdlibCodeSearchConfig()
    functions = stdlib_functions(config)
    split_of = module_splits(functions, config.val_fraction, config.test_fraction, config.partition)
    sizes = {}
    with replacing(folder, durable=False) as partial:
        (partial / "qrels").mkdir(parents=True)
        _write_jsonl(
            partial / "corpus.jsonl",
            [{"_id": f.id, "title": "", "text": f.document} for f in functions],
        )
        _write_jsonl(partial / "queries.jsonl", [{"_id": f.id, "text": f.query} for f in functions])
        for split in SPLITS:
            ids = [f.id for f in functions if split_of[f.module] == split]
            rows = "".join(f"{i}\t{i}\t1\n" for i in ids)
            (partial / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
            sizes[split] = len(ids)
    log.info("stdlib code search built in %s: %s queries", folder, sizes)
    return sizes


class StdlibCodeSearchDataModule(RetrievalDataModule):
    """The stdlib code-search task (built once, then read from its cache) as a BEIR datamodule.

    Each split searches only its own functions by default (`eval_corpus="split"`), as in
    CodeSearchNet, so no val/test function is ever a training negative.
    """

    def __init__(self, config: StdlibCodeSearchConfig | None = None, **params: Any) -> None:
        config = StdlibCodeSearchConfig.build(config, params)
        folder = Path(config.data_dir) / "stdlib_codesearch" / fingerprint(config)
        super().__init__(str(folder), None, {split: split for split in SPLITS})
        self.config = config

    def prepare_data(self) -> None:
        if not Path(str(self.path)).is_dir():
            build_stdlib_codesearch(str(self.path), self.config)

    def setup(self, stage: str | None = None) -> None:
        self.prepare_data()
        super().setup(stage)
