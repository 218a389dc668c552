"""ColBERT (Khattab & Zaharia 2020): a late-interaction retriever on any Hugging Face encoder.

Encoder -> bias-free linear projection to `embedding_size` -> L2 normalisation per token; texts
are compared token by token with MaxSim. Following the paper (section 3.2) and ColBERTv2's
tokenizers: a marker token goes right after [CLS] ("[Q]" for queries, "[D]" for documents),
queries are padded with [MASK] to `max_length_query` (query augmentation; the [MASK] positions
are always scored, and attended to by the encoder only with `attend_to_expansion_tokens`),
documents are truncated at `max_length_document` and padded to the batch's longest, and
punctuation tokens are dropped from document embeddings (the skiplist). The API is PyLate's
(`encode`, `scores`, `save_pretrained`, `from_pretrained`), from research.models.hf_retriever,
which the single-vector dense retriever (research.models.dense) shares.

Markers: the marker strings are added to the tokenizer as special tokens and the backbone's
input embeddings grow by one row each (transformers' mean resizing: new rows drawn around the
mean of the existing ones). A marker already in the vocabulary, e.g. "[unused0]" as in the
original ColBERT code, is used as it is. The saved tokenizer and backbone config keep the added
tokens, so `save_pretrained` / `from_pretrained` round-trips them.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from research.models.configs import ColBERTConfig
from research.models.hf_retriever import HFRetriever
from research.utils.backbones import MINILM_HUB_ID, default_backbone

__all__ = ["MINILM_HUB_ID", "ColBERT", "default_backbone"]


class ColBERT(HFRetriever):
    """Per-token embeddings of queries and documents, scored with MaxSim."""

    config_class = ColBERTConfig
    config_file = "colbert_config.json"
    fixed_by_weights: ClassVar[tuple[str, ...]] = (
        "backbone",
        "embedding_size",
        "query_marker",
        "document_marker",
    )

    def __init__(self, config: ColBERTConfig | None = None, **params: Any) -> None:
        super().__init__(config, **params)

    def _setup(self, config: ColBERTConfig, encoder: nn.Module, tokenizer: Any) -> None:
        """Attach backbone, tokenizer (with markers) and projection; shared by both loaders."""
        self.embedding_size = config.embedding_size
        self.attend_to_expansion_tokens = config.attend_to_expansion_tokens
        self.skiplist_punctuation = config.skiplist_punctuation
        if tokenizer.mask_token_id is None or tokenizer.pad_token_id is None:
            raise ValueError(
                f"ColBERT needs a backbone tokenizer with mask and pad tokens (query "
                f"augmentation pads with [MASK]); {config.backbone} lacks one"
            )
        markers = [config.query_marker, config.document_marker]
        tokenizer.add_tokens(markers, special_tokens=True)
        tokenizer.padding_side = "right"  # the marker goes at a fixed position after [CLS]
        if len(tokenizer) > encoder.get_input_embeddings().num_embeddings:
            encoder.resize_token_embeddings(len(tokenizer))
        self.query_marker_id, self.document_marker_id = tokenizer.convert_tokens_to_ids(markers)
        first = tokenizer("")["input_ids"][:1]
        self.marker_position = 1 if first and first[0] in tokenizer.all_special_ids else 0
        words = config.skiplist_words
        skipped = tokenizer.convert_tokens_to_ids(
            list(string.punctuation if words is None else words)
        )
        skiplist = sorted({i for i in skipped if i not in (None, tokenizer.unk_token_id)})
        self.register_buffer(
            "skiplist_ids", torch.tensor(skiplist, dtype=torch.long), persistent=False
        )
        self._attach_backbone(config, encoder, tokenizer)
        self.projection = nn.Linear(encoder.config.hidden_size, self.embedding_size, bias=False)

    def tokenize(self, texts: list[str], is_query: bool) -> dict[str, Tensor]:
        """input_ids and attention_mask on CPU, with the marker and (queries) [MASK] padding."""
        length = self.max_length_query if is_query else self.max_length_document
        encoded = self.tokenizer(
            list(texts),
            padding="max_length" if is_query else "longest",
            truncation=True,
            max_length=length - 1,  # one place is kept for the marker
            return_tensors="pt",
        )
        ids, attention = encoded["input_ids"], encoded["attention_mask"]
        marker = self.query_marker_id if is_query else self.document_marker_id
        at = self.marker_position
        ids = torch.cat([ids[:, :at], torch.full_like(ids[:, :1], marker), ids[:, at:]], dim=1)
        attention = torch.cat(
            [attention[:, :at], torch.ones_like(attention[:, :1]), attention[:, at:]], dim=1
        )
        if is_query:
            expansion = attention == 0
            ids = ids.masked_fill(expansion, self.tokenizer.mask_token_id)
            if self.attend_to_expansion_tokens:
                attention = attention.masked_fill(expansion, 1)
        return {"input_ids": ids, "attention_mask": attention}

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, is_query: bool
    ) -> tuple[Tensor, Tensor]:
        """(unit-norm token embeddings [B, L, embedding_size], bool mask of the scored tokens)."""
        hidden = self.hidden_states(input_ids, attention_mask)
        embeddings = F.normalize(self.projection(hidden), p=2, dim=-1)
        if is_query:
            return embeddings, torch.ones_like(input_ids, dtype=torch.bool)
        mask = attention_mask.bool()
        if self.skiplist_punctuation:
            mask &= ~torch.isin(input_ids, self.skiplist_ids)
        return embeddings, mask

    @classmethod
    def from_pretrained(cls, path: str | Path, **overrides: Any) -> ColBERT:
        """Rebuild a model saved with `save_pretrained`, or load a PyLate model folder or a
        Stanford colbert-ai checkpoint folder with its markers, lengths and skiplist
        (research.models.colbert_formats). Overrides replace saved arguments (lengths, flags),
        except those the weights fix (`fixed_by_weights`)."""
        from research.models import colbert_formats as formats

        folder = Path(path)
        kind = formats.checkpoint_format(folder)
        if kind == "ours":
            return super().from_pretrained(folder, **overrides)
        read = formats.read_pylate if kind == "pylate" else formats.read_stanford
        foreign = read(folder)
        saved = {**foreign.settings, "backbone": str(foreign.encoder)}
        model = cls._assemble(folder, saved, overrides, foreign.encoder, pretrained=True)
        with torch.no_grad():
            model.projection.weight.copy_(foreign.projection)
        return model

    def extra_repr(self) -> str:
        return (
            f"embedding_size={self.embedding_size}, max_length_query={self.max_length_query}, "
            f"max_length_document={self.max_length_document}, "
            f"attend_to_expansion_tokens={self.attend_to_expansion_tokens}, "
            f"skiplist_punctuation={self.skiplist_punctuation}"
        )
