"""Multi-head self-attention through `scaled_dot_product_attention` (flash / memory-efficient
kernels where the hardware has them), with grouped-query attention, optional QK-norm and
optional causal masking."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from research.models.transformer.positions import RotaryEmbedding, rotate


class SelfAttention(nn.Module):
    """`n_kv_heads` < `n_heads` shares each key/value head among n_heads / n_kv_heads query
    heads (GQA; 1 = multi-query attention); `qk_norm` RMS-normalises q and k per head; `causal`
    lets position t attend to positions <= t only."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        qk_norm: bool = False,
        rotary: RotaryEmbedding | None = None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        n_kv_heads = n_kv_heads or n_heads  # the config checks that it divides n_heads
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = d_model // n_heads
        # One fused projection: a single matmul for q, k and v (laid out in that order, as
        # torch's in_proj_weight).
        self.qkv = nn.Linear(d_model, (n_heads + 2 * n_kv_heads) * self.head_dim, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        self.q_norm = nn.RMSNorm(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = nn.RMSNorm(self.head_dim) if qk_norm else nn.Identity()
        self.dropout = dropout
        self.rotary = rotary
        self.causal = causal

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, d_model); mask: (B, T) bool, True at real tokens."""
        kv_width = self.n_kv_heads * self.head_dim
        q, k, v = self.qkv(x).split([x.shape[-1], kv_width, kv_width], dim=-1)
        q = self.q_norm(self._heads(q, self.n_heads))
        k = self.k_norm(self._heads(k, self.n_kv_heads))
        v = self._heads(v, self.n_kv_heads)
        if self.rotary is not None:
            cos, sin = self.rotary.tables(x.shape[1], x.device)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if self.n_kv_heads != self.n_heads:
            repeat = self.n_heads // self.n_kv_heads
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        attn_mask = attention_mask(mask, self.causal, x.shape[1])
        y = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=attn_mask,
            dropout_p=self.dropout if self.training else 0.0,
            # SDPA's own causal path (and its fused kernels) only when nothing is padded.
            is_causal=self.causal and attn_mask is None,
        )
        return self.out(y.transpose(1, 2).reshape(x.shape))

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, head_dim={self.head_dim}, "
            f"causal={self.causal}"
        )


def attention_mask(mask: torch.Tensor | None, causal: bool, length: int) -> torch.Tensor | None:
    """SDPA's boolean mask (True = may attend) from key padding (B, T), combined with the causal
    triangle; None when there is no padding (SDPA's is_causal then covers causality). Each
    position may always attend to itself, so a padded query never has every key masked (which
    would give NaN); real queries never see padding or a later position either way."""
    if mask is None:
        return None
    keys = mask[:, None, None, :]
    if not causal:
        return keys
    earlier = torch.ones(length, length, dtype=torch.bool, device=mask.device).tril()
    itself = torch.eye(length, dtype=torch.bool, device=mask.device)
    return (earlier & keys) | itself
