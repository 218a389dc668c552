"""A code corpus that ships with every Python: the running interpreter's standard library source.

Every `.py` file under the stdlib (tests included, site-packages left out; Python 3.11.7: 1,786
readable files, 31.5 MB), each a document, split into train/val/test by a hash of its path, so
the split is the same on every machine and no file straddles two splits. Files that are not UTF-8
are skipped (a few test fixtures). The fingerprint covers the Python version.
"""

from __future__ import annotations

import functools
import platform
import sysconfig
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from research.data.configs import StdlibCodeConfig
from research.data.language_model import LanguageModelDataModule
from research.data.stdlib_text import split_of


@functools.cache
def stdlib_paths() -> tuple[tuple[str, Path], ...]:
    """(path relative to the stdlib, full path) of every stdlib `.py` file, by path."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = ((path.relative_to(root), path) for path in sorted(root.rglob("*.py")))
    return tuple((rel.as_posix(), path) for rel, path in found if "site-packages" not in rel.parts)


def stdlib_files() -> Iterator[tuple[str, str]]:
    """(path relative to the stdlib, source) of every readable stdlib `.py` file, by path, each
    read when reached (the corpus is never all in memory)."""
    for relative, path in stdlib_paths():
        try:
            yield relative, path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue


class StdlibCodeDataModule(LanguageModelDataModule):
    name = "stdlib_code"

    def __init__(self, config: StdlibCodeConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = StdlibCodeConfig.build(config, params)

    def source_facts(self) -> list[Any]:
        return [platform.python_version(), self.config.max_files]

    def texts(self, split: str) -> Iterator[str]:
        config = self.config
        for path, source in islice(stdlib_files(), config.max_files):
            if split_of(path, config.val_fraction, config.test_fraction) == split:
                yield source
