"""Any text-classification dataset through `datasets.load_dataset` (ag_news, imdb, ...).

With network, `name` is a hub dataset; offline, `name` is a builder such as "json" or "csv" and
`data_files` points at local files in the same shape (a text column and an integer label
column). A WordPiece tokenizer is trained on the train split and cached under
`data_dir/hf_text/<fingerprint>/`, so no tokenizer is downloaded either.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import TensorDataset

from research.data.base import SplitDataModule
from research.data.configs import HFTextConfig
from research.data.hf_load import load_hf_dataset
from research.data.tokenizer import wordpiece


class HFTextDataModule(SplitDataModule):
    """Padded token ids with [CLS] first, the attention mask and the label, per example."""

    def __init__(self, config: HFTextConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = HFTextConfig.build(config, params)
        self.splits: dict[str, TensorDataset] = {}
        self.collate_fn = _as_batch

    def _load(self) -> Any:
        config = self.config
        columns = {"text_field": config.text_field, "label_field": config.label_field}
        return load_hf_dataset(config.name, None, config.data_files, config.data_dir, columns)

    def _fingerprint(self, train_texts: list[str]) -> str:
        config = self.config
        digest = hashlib.sha1("\n".join(train_texts).encode()).hexdigest()
        facts = [config.name, digest, config.vocab_size, config.max_len, "wordpiece-v1"]
        return hashlib.sha1(json.dumps(facts).encode()).hexdigest()[:12]

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        config, loaded = self.config, self._load()
        held_out = loaded["train"].train_test_split(test_size=config.val_fraction, seed=config.seed)
        parts = {"train": held_out["train"], "val": held_out["test"]}
        parts["test"] = loaded["test"] if "test" in loaded else held_out["test"]
        if config.max_train_size:
            parts["train"] = parts["train"].select(
                range(min(config.max_train_size, len(parts["train"])))
            )
        train_texts = list(parts["train"][config.text_field])
        folder = Path(config.data_dir) / "hf_text" / self._fingerprint(train_texts)
        tokenizer = wordpiece(folder / "tokenizer.json", train_texts, config.vocab_size)
        tokenizer.enable_truncation(config.max_len)
        tokenizer.enable_padding(pad_id=0, length=config.max_len)
        tokenizer.post_processor = _cls_first(tokenizer)
        for split, part in parts.items():
            encoded = tokenizer.encode_batch(list(part[config.text_field]))
            ids = torch.tensor([e.ids for e in encoded], dtype=torch.long)
            mask = torch.tensor([e.attention_mask for e in encoded], dtype=torch.long)
            labels = torch.tensor(part[config.label_field], dtype=torch.long)
            if labels.numel() and (labels.min() < 0 or labels.max() >= config.num_classes):
                raise ValueError(
                    f"data.num_classes={config.num_classes} but {split} labels span "
                    f"{int(labels.min())}..{int(labels.max())}"
                )
            self.splits[split] = TensorDataset(ids, mask, labels)


def _cls_first(tokenizer: Any) -> Any:
    from tokenizers.processors import TemplateProcessing

    return TemplateProcessing(
        single="[CLS] $A", special_tokens=[("[CLS]", tokenizer.token_to_id("[CLS]"))]
    )


def _as_batch(items: list[tuple[torch.Tensor, ...]]) -> dict[str, torch.Tensor]:
    ids, mask, labels = (torch.stack(column) for column in zip(*items, strict=True))
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
