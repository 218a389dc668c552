"""One encoder block, post-norm (Vaswani et al. 2017) or pre-norm (Xiong et al. 2020)."""

from __future__ import annotations

import torch
from torch import nn

from research.models.transformer.attention import SelfAttention

# Keyed by research.models.configs.ACTIVATIONS, which declares the valid names.
ACTIVATION_MODULES = {"relu": nn.ReLU, "gelu": nn.GELU}


def make_norm(norm_type: str, d_model: int) -> nn.Module:
    return nn.LayerNorm(d_model) if norm_type == "layernorm" else nn.RMSNorm(d_model)


class EncoderBlock(nn.Module):
    """post: x = N(x + Drop(Attn(x))); x = N(x + Drop(FFN(x))).
    pre:  x = x + Drop(Attn(N(x)));  x = x + Drop(FFN(N(x))) (the encoder adds a final N).
    Parameter names mirror torch.nn.TransformerEncoderLayer's (linear1/2, norm1/2); in eval
    mode the two compute the same function."""

    def __init__(
        self,
        attention: SelfAttention,
        d_model: int,
        d_ff: int,
        dropout: float = 0.0,
        norm: str = "pre",
        norm_type: str = "layernorm",
        activation: str = "gelu",
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.norm_position = norm
        self.attention = attention
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.activation = ACTIVATION_MODULES[activation]()
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.norm1, self.norm2 = make_norm(norm_type, d_model), make_norm(norm_type, d_model)
        self.dropout = nn.Dropout(dropout)

    def _ffn(self, x: torch.Tensor) -> torch.Tensor:
        # Dropout only on the sub-layer output, as in Vaswani et al. (2017) and BERT; torch's
        # layer also drops inside the FFN, which costs a mask over the 4x wider activation.
        return self.linear2(self.activation(self.linear1(x)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.norm_position == "post":
            x = self.norm1(x + self.dropout(self.attention(x, mask)))
            return self.norm2(x + self.dropout(self._ffn(x)))
        x = x + self.dropout(self.attention(self.norm1(x), mask))
        return x + self.dropout(self._ffn(self.norm2(x)))

    def extra_repr(self) -> str:
        return f"norm={self.norm_position!r}"
