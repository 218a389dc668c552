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
import hashlib
import json
import platform
import sysconfig
from pathlib import Path

import torch
from torch.utils.data import TensorDataset

from research.data.splits import SplitDataModule
from research.data.tokenizer import wordpiece

_SKIP_PARTS = {"test", "tests", "idlelib", "site-packages", "lib2to3", "ensurepip", "turtledemo"}


def stdlib_docstrings(min_chars: int = 40) -> list[tuple[str, str]]:
    """(top-level module, docstring) for every docstring of the stdlib's source, sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _SKIP_PARTS & set(relative.parts) or relative.parts[0].startswith("_"):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        module = relative.parts[0].removesuffix(".py")
        nodes = [tree, *ast.walk(tree)]
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        for node in nodes:
            if (
                isinstance(node, kinds)
                and (doc := ast.get_docstring(node))
                and len(doc) >= min_chars
            ):
                found.append((module, " ".join(doc.split())))
    return sorted(set(found))


def _split_of(module: str, val_fraction: float, test_fraction: float) -> str:
    bucket = int(hashlib.sha1(module.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if bucket < test_fraction:
        return "test"
    return "val" if bucket < test_fraction + val_fraction else "train"


class StdlibTextDataModule(SplitDataModule):
    """Fixed-length token blocks of stdlib docstrings (each starts with [CLS]) for MLM."""

    def __init__(
        self,
        data_dir: str = "data",
        vocab_size: int = 8000,
        max_len: int = 128,
        batch_size: int = 32,
        num_workers: int = 0,
        seed: int = 0,
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        max_train_blocks: int | None = None,
    ) -> None:
        super().__init__()
        self.data_dir, self.vocab_size, self.max_len = Path(data_dir), vocab_size, max_len
        self.batch_size, self.num_workers, self.seed = batch_size, num_workers, seed
        self.val_fraction, self.test_fraction = val_fraction, test_fraction
        self.max_train_blocks = max_train_blocks
        self.collate_fn = _as_batch
        self.splits: dict[str, TensorDataset] = {}

    @property
    def fingerprint(self) -> str:
        facts = [platform.python_version(), self.vocab_size, self.max_len]
        facts += [self.val_fraction, self.test_fraction, "wordpiece-v1"]
        return hashlib.sha1(json.dumps(facts).encode()).hexdigest()[:12]

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "stdlib_text" / self.fingerprint

    def tokenizer(self):  # noqa: ANN201 - tokenizers.Tokenizer, imported lazily
        texts = (text for _, text in stdlib_docstrings())
        return wordpiece(self.cache_dir / "tokenizer.json", texts, self.vocab_size)

    def _blocks(self) -> dict[str, torch.Tensor]:
        path = self.cache_dir / "blocks.pt"
        if path.is_file():
            return torch.load(path, weights_only=True)
        tokenizer = self.tokenizer()
        cls, body = tokenizer.token_to_id("[CLS]"), self.max_len - 1
        streams: dict[str, list[int]] = {"train": [], "val": [], "test": []}
        for module, text in stdlib_docstrings():
            ids = tokenizer.encode(text).ids + [tokenizer.token_to_id("[SEP]")]
            streams[_split_of(module, self.val_fraction, self.test_fraction)].extend(ids)
        blocks = {}
        for split, ids in streams.items():
            usable = len(ids) // body * body
            chunks = torch.tensor(ids[:usable], dtype=torch.int32).view(-1, body)
            blocks[split] = torch.cat(
                [torch.full((len(chunks), 1), cls, dtype=torch.int32), chunks], 1
            )
        torch.save(blocks, path)
        return blocks

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        for split, ids in self._blocks().items():
            ids = ids.long()
            if split == "train" and self.max_train_blocks:
                ids = ids[: self.max_train_blocks]
            self.splits[split] = TensorDataset(ids)


def _as_batch(items: list[tuple[torch.Tensor]]) -> dict[str, torch.Tensor]:
    input_ids = torch.stack([item[0] for item in items])
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
