"""Any text dataset through `datasets.load_dataset`, for causal language modelling.

With network, `name` (and `subset`) is a hub dataset such as wikitext / wikitext-103-raw-v1;
offline, `name` is a builder such as "json" or "text" with local `data_files`. Each row's
`text_field` is a document. The dataset's validation and test splits are used where it has them;
otherwise they are carved from train by a hash of each document (`val_fraction`,
`test_fraction`), the same on every machine. Blank documents are left out.

Local files are streamed (`datasets`' streaming mode: read in batches, never converted or held
whole); a hub dataset is cached by `datasets` as Arrow files and read back in batches.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from typing import Any

from research.data.configs import HFLanguageModelConfig
from research.data.hf_load import load_hf_dataset
from research.data.language_model import SPLITS, LanguageModelDataModule
from research.data.stdlib_text import split_of

_HELD_OUT = {"val": ("validation", "valid", "val"), "test": ("test",)}
_ROWS_PER_READ = 1000


class HFLanguageModelDataModule(LanguageModelDataModule):
    name = "hf_lm"

    def __init__(self, config: HFLanguageModelConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = HFLanguageModelConfig.build(config, params)

    def source_facts(self) -> list[Any]:
        return [self.config.name, self.config.subset, self._digest]

    @functools.cached_property
    def _digest(self) -> str:
        """A hash of every split's documents, read in one pass."""
        parts = {split: hashlib.sha1() for split in SPLITS}
        counts = dict.fromkeys(SPLITS, 0)
        for split, text in self._rows(set(SPLITS)):
            parts[split].update(text.encode())
            counts[split] += 1
        digest = hashlib.sha1()
        for split in SPLITS:
            digest.update(f"{split}:{counts[split]}:{parts[split].hexdigest()}".encode())
        return digest.hexdigest()

    def texts(self, split: str) -> Iterator[str]:
        return (text for _, text in self._rows({split}))

    def _rows(self, wanted: set[str]) -> Iterator[tuple[str, str]]:
        """(split, document) of every non-blank document of the `wanted` splits, in order: the
        train rows (with the splits carved from them), then each held-out split the data has."""
        loaded, config = self._loaded, self.config
        own = {
            split: next((loaded[name] for name in names if name in loaded), None)
            for split, names in _HELD_OUT.items()
        }
        carved = {split for split, rows in own.items() if rows is None}
        if wanted & {"train", *carved}:
            for text in _column(loaded["train"], config.text_field):
                split = "train"
                if carved:
                    split = split_of(text, config.val_fraction, config.test_fraction)
                    split = split if split in carved else "train"
                if split in wanted:
                    yield split, text
        for split, rows in own.items():
            if rows is not None and split in wanted:
                yield from ((split, text) for text in _column(rows, config.text_field))

    @functools.cached_property
    def _loaded(self) -> Any:
        config = self.config
        return load_hf_dataset(
            config.name,
            config.subset,
            config.data_files,
            config.data_dir,
            {"text_field": config.text_field},
            streaming=config.data_files is not None,
        )


def _column(rows: Any, field: str) -> Iterator[str]:
    """The non-blank values of `field`, read a batch of rows at a time."""
    for batch in rows.select_columns([field]).iter(batch_size=_ROWS_PER_READ):
        yield from (text for text in batch[field] if text.strip())
