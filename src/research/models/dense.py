"""A dense (single-vector) retriever on any Hugging Face encoder: the baseline ColBERT is
measured against, trained and evaluated by the same task, loss and searchers.

Encoder -> mean of the hidden states over the real tokens (the attention mask) -> L2
normalisation: all-MiniLM-L6-v2 as its sentence-transformers config uses it, so an untrained
model scores what the zero-shot dense baseline scores. No markers, no [MASK] query padding, no
projection: queries and documents are cut at their max lengths and padded to the batch's longest,
and the padding is never pooled.

Each text is one row, [B, 1, hidden], with an all-true mask: MaxSim over one row each is the dot
product (the cosine when normalised), so the contrastive loss over the batch is the in-batch
contrastive loss of sentence embeddings (MultipleNegativesRankingLoss with hard negatives), and
the exact searcher scores every stored vector (research.models.hf_retriever).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from research.models.configs import DenseRetrieverConfig
from research.models.hf_retriever import HFRetriever


class DenseRetriever(HFRetriever):
    """One mean-pooled (normalised) embedding per text, scored by dot product."""

    config_class = DenseRetrieverConfig
    config_file = "dense_config.json"

    def __init__(self, config: DenseRetrieverConfig | None = None, **params: Any) -> None:
        super().__init__(config, **params)

    def _setup(self, config: DenseRetrieverConfig, encoder: nn.Module, tokenizer: Any) -> None:
        """Attach backbone and tokenizer; shared by both loaders."""
        if tokenizer.pad_token_id is None:
            raise ValueError(
                f"DenseRetriever needs a backbone tokenizer with a pad token (batches are "
                f"padded to their longest text); {config.backbone} lacks one"
            )
        self.normalize = config.normalize
        self._attach_backbone(config, encoder, tokenizer)

    def tokenize(self, texts: list[str], is_query: bool) -> dict[str, Tensor]:
        """input_ids and attention_mask on CPU, cut at the max length, padded to the longest."""
        encoded = self.tokenizer(
            list(texts),
            padding="longest",
            truncation=True,
            max_length=self.max_length_query if is_query else self.max_length_document,
            return_tensors="pt",
        )
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, is_query: bool
    ) -> tuple[Tensor, Tensor]:
        """(pooled embeddings [B, 1, hidden], all-true mask [B, 1]); `is_query` only picks the
        max length in `tokenize`."""
        hidden = self.hidden_states(input_ids, attention_mask)
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)
        if self.normalize:
            pooled = F.normalize(pooled, p=2, dim=-1)
        return pooled.unsqueeze(1), torch.ones_like(input_ids[:, :1], dtype=torch.bool)

    def extra_repr(self) -> str:
        return (
            f"max_length_query={self.max_length_query}, "
            f"max_length_document={self.max_length_document}, normalize={self.normalize}"
        )
