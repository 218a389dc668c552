"""The transformer encoder and its heads: sequence classification, masked and causal language
modelling (a causal LM is this encoder with `causal=True`: the same blocks, norms and
positions serve both directions)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from research.models.configs import (
    CausalLanguageModelConfig,
    EncoderConfig,
    MaskedLanguageModelConfig,
    SequenceClassifierConfig,
)
from research.models.transformer.attention import SelfAttention
from research.models.transformer.block import EncoderBlock, make_norm
from research.models.transformer.positions import RotaryEmbedding, sinusoidal_table


class TransformerEncoder(nn.Module):
    """Token embedding -> position scheme -> blocks -> final norm (pre-norm only).

    Initialisation (GPT-2's scheme, Radford et al. 2019): weights ~ N(0, 0.02), and the two
    projections that write into the residual stream (attention output, second FFN layer) scaled
    by 1/sqrt(2 n_layers), so the residual stream's variance stays near its embedding's
    variance however deep the stack. `embedding_std` sets the token and learned-position
    embeddings' std apart: at 0.02 a token's identity is comparable to the blocks' first
    writes into the residual stream (and 35x smaller than the sinusoidal table); at 1.0 (torch's
    nn.Embedding default) it stays dominant, which associative recall needed to train here.
    `init="xavier"` instead draws every linear weight from Glorot's normal, N(0, 2 / (fan_in +
    fan_out)), with no depth scaling: the setting of Xiong et al. (2020)'s analysis and of
    fairseq's Transformer, where a pre-norm residual stream grows like sqrt(n_layers).
    """

    def __init__(self, config: EncoderConfig | None = None, **params: Any) -> None:
        super().__init__()
        # A head's config (a subclass) is an encoder config too: its extra fields are the head's.
        self.config = c = EncoderConfig.build(config, params)
        self.d_model, self.n_layers, self.position = c.d_model, c.n_layers, c.position
        self.embed = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_token_id)
        self.learned = nn.Embedding(c.max_len, c.d_model) if c.position == "learned" else None
        if c.position == "sinusoidal":
            table = sinusoidal_table(c.max_len, c.d_model)
            self.register_buffer("sinusoid", table, persistent=False)
        rotary = None
        if c.position == "rope":
            rotary = RotaryEmbedding(c.head_dim, c.rope_base, c.rope_scaling)
        self.blocks = nn.ModuleList(
            EncoderBlock(
                SelfAttention(
                    c.d_model,
                    c.n_heads,
                    c.n_kv_heads,
                    c.dropout,
                    c.bias,
                    c.qk_norm,
                    rotary,
                    c.causal,
                ),
                c.d_model,
                c.d_ff or 4 * c.d_model,
                c.dropout,
                c.norm,
                c.norm_type,
                c.activation,
                c.bias,
            )
            for _ in range(c.n_layers)
        )
        self.final_norm = make_norm(c.norm_type, c.d_model) if c.norm == "pre" else nn.Identity()
        self.dropout = nn.Dropout(c.dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, param in self.named_parameters():
            if param.dim() < 2 or "norm" in name:
                continue
            if name in ("embed.weight", "learned.weight"):
                nn.init.normal_(param, 0.0, self.config.embedding_std)
                continue
            if self.config.init == "xavier":
                nn.init.xavier_normal_(param)
                continue
            std = 0.02
            if name.endswith(("attention.out.weight", "linear2.weight")):
                std /= math.sqrt(2 * self.n_layers)
            nn.init.normal_(param, 0.0, std)
        for module in self.modules():
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        with torch.no_grad():
            self.embed.weight[self.config.pad_token_id].zero_()

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """input_ids: (B, T) -> hidden states (B, T, d_model); attention_mask 1 at real tokens."""
        length = input_ids.shape[1]
        x = self.embed(input_ids)
        if self.learned is not None:
            x = x + self.learned(torch.arange(length, device=input_ids.device))
        elif self.position == "sinusoidal":
            if length > self.sinusoid.shape[0]:
                self.sinusoid = sinusoidal_table(length, self.d_model).to(x.device)
            x = x + self.sinusoid[:length]
        x = self.dropout(x)
        # No mask when nothing is padded: SDPA may then pick its fused kernels. Not while
        # compiling: reading the mask's values on the host would break the graph there.
        mask = None
        tracing = torch.compiler.is_compiling()
        if attention_mask is not None and (tracing or not bool(attention_mask.all())):
            mask = attention_mask.bool()
        for block in self.blocks:
            x = block(x, mask)
        return self.final_norm(x)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, n_layers={self.n_layers}, position={self.position!r}, "
            f"init={self.config.init!r}, causal={self.config.causal}"
        )


class SequenceClassifier(nn.Module):
    """An encoder plus a linear head on the [CLS] (first) token, the mean of real tokens, or the
    last real token (where a task puts its query, e.g. associative recall)."""

    def __init__(self, config: SequenceClassifierConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = SequenceClassifierConfig.build(config, params)
        self.pooling = self.config.pooling
        self.encoder = TransformerEncoder(self.config)
        self.head = nn.Linear(self.encoder.d_model, self.config.num_classes)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        hidden = self.encoder(input_ids, attention_mask)
        if self.pooling == "cls":
            return self.head(hidden[:, 0])
        if self.pooling == "last":
            if attention_mask is None:
                return self.head(hidden[:, -1])
            # The first maximum of the running count of real tokens is the last real token.
            last = attention_mask.long().cumsum(dim=1).argmax(dim=1)
            return self.head(hidden[torch.arange(hidden.shape[0], device=hidden.device), last])
        if attention_mask is None:
            return self.head(hidden.mean(dim=1))
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return self.head((hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0))

    def extra_repr(self) -> str:
        return f"pooling={self.pooling!r}"


class MaskedLanguageModel(nn.Module):
    """An encoder plus a vocabulary head; with `tie_weights` the head's weight is the token
    embedding itself (Press & Wolf 2017), so the output and input token spaces coincide."""

    def __init__(self, config: MaskedLanguageModelConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = MaskedLanguageModelConfig.build(config, params)
        tie_weights = self.config.tie_weights
        self.encoder = TransformerEncoder(self.config)
        vocab_size, d_model = self.encoder.embed.weight.shape
        self.transform = nn.Sequential(
            nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model)
        )
        self.head = nn.Linear(d_model, vocab_size)
        if tie_weights:
            self.head.weight = self.encoder.embed.weight
        self.tie_weights = tie_weights

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.head(self.transform(self.encoder(input_ids, attention_mask)))

    def extra_repr(self) -> str:
        return f"tie_weights={self.tie_weights}"


class CausalLanguageModel(nn.Module):
    """A causal encoder plus a next-token head: logits (B, T, vocab) where row t scores token
    t + 1 from tokens <= t. With `tie_weights` the head is the token embedding (Press & Wolf
    2017; GPT-2 does the same), so it adds no parameters."""

    def __init__(self, config: CausalLanguageModelConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = CausalLanguageModelConfig.build(config, params)
        self.encoder = TransformerEncoder(self.config)
        vocab_size, d_model = self.encoder.embed.weight.shape
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        if self.config.tie_weights:
            self.head.weight = self.encoder.embed.weight

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.head(self.encoder(input_ids, attention_mask))

    def extra_repr(self) -> str:
        return f"tie_weights={self.config.tie_weights}"
