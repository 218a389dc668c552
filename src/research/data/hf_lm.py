"""Any text dataset through `datasets.load_dataset`, for causal language modelling.

With network, `name` (and `subset`) is a hub dataset such as wikitext / wikitext-103-raw-v1;
offline, `name` is a builder such as "json" or "text" with local `data_files`. Each row's
`text_field` is a document. The dataset's validation and test splits are used where it has them;
otherwise they are carved from train by a hash of each document (`val_fraction`,
`test_fraction`), the same on every machine.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from research.data.configs import HFLanguageModelConfig
from research.data.hf_load import load_hf_dataset
from research.data.language_model import LanguageModelDataModule
from research.data.stdlib_text import split_of

_HELD_OUT = {"val": ("validation", "valid", "val"), "test": ("test",)}


class HFLanguageModelDataModule(LanguageModelDataModule):
    name = "hf_lm"

    def __init__(self, config: HFLanguageModelConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = HFLanguageModelConfig.build(config, params)

    def source_facts(self) -> list[Any]:
        digest = hashlib.sha1()
        for split, texts in self.documents().items():
            digest.update(f"{split}:{len(texts)}".encode())
            for text in texts:
                digest.update(text.encode())
        return [self.config.name, self.config.subset, digest.hexdigest()]

    @functools.cached_property
    def _documents(self) -> dict[str, list[str]]:
        loaded, config = self._load(), self.config
        parts = {"train": list(loaded["train"][config.text_field]), "val": [], "test": []}
        for split, names in _HELD_OUT.items():
            found = next((loaded[n] for n in names if n in loaded), None)
            if found is not None:
                parts[split] = list(found[config.text_field])
        carve = [split for split in ("val", "test") if not parts[split]]
        if carve:
            kept = []
            for text in parts["train"]:
                split = split_of(text, config.val_fraction, config.test_fraction)
                (parts[split] if split in carve else kept).append(text)
            parts["train"] = kept
        return {split: [t for t in texts if t.strip()] for split, texts in parts.items()}

    def documents(self) -> dict[str, list[str]]:
        return self._documents

    def _load(self) -> Any:
        config = self.config
        return load_hf_dataset(
            config.name,
            config.subset,
            config.data_files,
            config.data_dir,
            {"text_field": config.text_field},
        )
