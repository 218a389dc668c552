"""A real text corpus from the running Python's standard library, for masked language modelling.

The corpus is every module, class and function docstring of the stdlib's own source (tests,
site-packages and vendored third-party code left out). A WordPiece tokenizer is trained on it
locally with the `tokenizers` library. Both are cached under `data_dir/stdlib_text/<fingerprint>`,
where the fingerprint covers the Python version and every build parameter, so a different Python
or vocabulary size never reuses a stale build. The split is by module (hash of its name), so
near-duplicate docstrings of one module never straddle train and test.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import platform
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch.utils.data import TensorDataset

from research.data.base import SplitDataModule
from research.data.configs import StdlibTextConfig
from research.data.tokenizer import wordpiece
from research.utils.atomic import replacing

_KINDS = {
    ast.Module: "module",
    ast.ClassDef: "class",
    ast.FunctionDef: "function",
    ast.AsyncFunctionDef: "function",
}
_SKIP_PARTS = {"test", "tests", "idlelib", "site-packages", "lib2to3", "ensurepip", "turtledemo"}


def stdlib_sources() -> Iterator[tuple[Path, str, ast.Module]]:
    """(path relative to the stdlib, source, parsed tree) of every stdlib file kept, by path."""
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _SKIP_PARTS & set(relative.parts) or relative.parts[0].startswith("_"):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        yield relative, source, tree


class StdlibDoc(NamedTuple):
    """One docstring: its top-level module, where it is defined, what kind of node, the text."""

    module: str  # top-level module, e.g. "json"
    name: str  # "<dotted source module>:<qualname>", e.g. "json.decoder:JSONDecoder.decode"
    kind: str  # "module", "class" or "function"
    text: str  # whitespace collapsed to single spaces


@functools.cache
def stdlib_docs(min_chars: int = 40) -> tuple[StdlibDoc, ...]:
    """Every docstring of the stdlib's source with at least `min_chars` characters, sorted.

    Cached per process: parsing the whole stdlib takes seconds and its result never changes."""
    found = set()
    for relative, _, tree in stdlib_sources():
        source = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
        module = relative.parts[0].removesuffix(".py")
        for qualname, node in [("", tree), *definitions(tree, "")]:
            if (doc := ast.get_docstring(node)) and len(doc) >= min_chars:
                kind = _KINDS[type(node)]
                found.add(StdlibDoc(module, f"{source}:{qualname}", kind, " ".join(doc.split())))
    return tuple(sorted(found))


def definitions(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.AST]]:
    """(qualname, node) of every class and function under `node`, named as `__qualname__` is.

    Definitions are statements, so only statements (and except/match clauses) are descended."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            qualname = prefix + child.name
            yield qualname, child
            inner = ".<locals>." if _KINDS[type(child)] == "function" else "."
            yield from definitions(child, qualname + inner)
        elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            yield from definitions(child, prefix)


def stdlib_docstrings(min_chars: int = 40) -> list[tuple[str, str]]:
    """(top-level module, docstring) for every docstring of the stdlib's source, sorted."""
    return sorted({(doc.module, doc.text) for doc in stdlib_docs(min_chars)})


def split_of(key: str, val_fraction: float, test_fraction: float) -> str:
    """The split (train, val or test) of `key`, from its hash: the same on every machine."""
    bucket = int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if bucket < test_fraction:
        return "test"
    return "val" if bucket < test_fraction + val_fraction else "train"


class StdlibTextDataModule(SplitDataModule):
    """Fixed-length token blocks of stdlib docstrings (each starts with [CLS]) for MLM."""

    def __init__(self, config: StdlibTextConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = StdlibTextConfig.build(config, params)
        self.collate_fn = _as_batch
        self.splits: dict[str, TensorDataset] = {}

    @property
    def fingerprint(self) -> str:
        config = self.config
        facts = [platform.python_version(), config.vocab_size, config.max_len]
        facts += [config.val_fraction, config.test_fraction, "wordpiece-v1"]
        return hashlib.sha1(json.dumps(facts).encode()).hexdigest()[:12]

    @property
    def cache_dir(self) -> Path:
        return Path(self.config.data_dir) / "stdlib_text" / self.fingerprint

    def tokenizer(self):  # noqa: ANN201 - tokenizers.Tokenizer, imported lazily
        texts = (text for _, text in stdlib_docstrings())
        return wordpiece(self.cache_dir / "tokenizer.json", texts, self.config.vocab_size)

    def _blocks(self) -> dict[str, torch.Tensor]:
        path = self.cache_dir / "blocks.pt"
        if path.is_file():
            return torch.load(path, weights_only=True)
        tokenizer = self.tokenizer()
        cls, body = tokenizer.token_to_id("[CLS]"), self.config.max_len - 1
        streams: dict[str, list[int]] = {"train": [], "val": [], "test": []}
        for module, text in stdlib_docstrings():
            ids = tokenizer.encode(text).ids + [tokenizer.token_to_id("[SEP]")]
            streams[split_of(module, self.config.val_fraction, self.config.test_fraction)].extend(
                ids
            )
        blocks = {}
        for split, ids in streams.items():
            usable = len(ids) // body * body
            chunks = torch.tensor(ids[:usable], dtype=torch.int32).view(-1, body)
            blocks[split] = torch.cat(
                [torch.full((len(chunks), 1), cls, dtype=torch.int32), chunks], 1
            )
        with replacing(path, durable=False) as partial:
            torch.save(blocks, partial)
        return blocks

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        for split, ids in self._blocks().items():
            ids = ids.long()
            if split == "train" and self.config.max_train_blocks:
                ids = ids[: self.config.max_train_blocks]
            self.splits[split] = TensorDataset(ids)


def _as_batch(items: list[tuple[torch.Tensor]]) -> dict[str, torch.Tensor]:
    input_ids = torch.stack([item[0] for item in items])
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
