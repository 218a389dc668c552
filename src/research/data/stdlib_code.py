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
from pathlib import Path
from typing import Any

from research.data.configs import StdlibCodeConfig
from research.data.language_model import LanguageModelDataModule
from research.data.stdlib_text import split_of


@functools.cache
def stdlib_files() -> tuple[tuple[str, str], ...]:
    """(path relative to the stdlib, source) of every readable stdlib `.py` file, by path."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if "site-packages" in relative.parts:
            continue
        try:
            found.append((relative.as_posix(), path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return tuple(found)


class StdlibCodeDataModule(LanguageModelDataModule):
    name = "stdlib_code"

    def __init__(self, config: StdlibCodeConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = StdlibCodeConfig.build(config, params)

    def source_facts(self) -> list[Any]:
        return [platform.python_version(), self.config.max_files]

    def documents(self) -> dict[str, list[str]]:
        files = stdlib_files()[: self.config.max_files]
        split: dict[str, list[str]] = {"train": [], "val": [], "test": []}
        for path, source in files:
            split[split_of(path, self.config.val_fraction, self.config.test_fraction)].append(
                source
            )
        return split
