"""Position information: sinusoidal and learned absolute tables, and rotary embeddings (RoPE).

RoPE here rotates the pairs (i, i + d/2) of each head ("rotate_half", as HF transformers does);
RoFormer's original pairs (2i, 2i + 1) are an equivalent permutation of the same rotation.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """Vaswani et al. (2017): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)."""
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    inv_freq = torch.exp(
        -math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model
    )
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)[:, : d_model // 2]
    return table.float()


def rope_frequencies(
    head_dim: int, base: float, scaling: dict | None
) -> tuple[torch.Tensor, float, float]:
    """Inverse frequencies, position divisor and attention scale for a RoPE scaling scheme.

    - linear: position interpolation, positions divided by the factor (Chen et al. 2023).
    - ntk: "NTK-aware" scaling, base multiplied by factor^(d / (d - 2)) (bloc97, 2023; as
      summarised in Peng et al. 2024, section 3.1).
    - yarn: YaRN (Peng et al. 2024): with r = original_max_len / wavelength per frequency,
      interpolate (divide by the factor) where r < alpha, keep where r > beta, ramp linearly
      between (alpha = 1, beta = 32), and scale attention by 1/t with sqrt(1/t) = 0.1 ln s + 1.
    """
    scaling = dict(scaling or {})  # checked by EncoderConfig (type, factor >= 1)
    kind = scaling.get("type", "none") or "none"
    factor = float(scaling.get("factor", 1.0))
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    if kind == "ntk":
        base = base * factor ** (head_dim / (head_dim - 2))
    inv_freq = base ** (-exponents)
    divisor, attention_scale = (factor if kind == "linear" else 1.0), 1.0
    if kind == "yarn":
        original = float(scaling.get("original_max_len", 2048))
        alpha, beta = float(scaling.get("alpha", 1.0)), float(scaling.get("beta", 32.0))
        ratio = original * inv_freq / (2 * math.pi)  # context length / wavelength
        ramp = ((ratio - alpha) / (beta - alpha)).clamp(0.0, 1.0)
        inv_freq = (1 - ramp) * inv_freq / factor + ramp * inv_freq
        attention_scale = 0.1 * math.log(factor) + 1.0
    return inv_freq.float(), divisor, attention_scale


class RotaryEmbedding(nn.Module):
    """cos/sin tables for RoPE, grown on demand when a longer sequence arrives."""

    def __init__(self, head_dim: int, base: float = 10000.0, scaling: dict | None = None) -> None:
        super().__init__()
        inv_freq, self.divisor, self.attention_scale = rope_frequencies(head_dim, base, scaling)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._cache: tuple[int, torch.Tensor, torch.Tensor] | None = None

    def tables(self, length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if self._cache is None or self._cache[0] < length or self._cache[1].device != device:
            positions = torch.arange(length, device=device, dtype=torch.float32) / self.divisor
            angles = torch.outer(positions, self.inv_freq.to(device))
            angles = torch.cat([angles, angles], dim=-1)
            # YaRN's temperature scales q and k alike, so q.k grows by attention_scale**2 = 1/t.
            self._cache = (
                length,
                angles.cos() * self.attention_scale,
                angles.sin() * self.attention_scale,
            )
        return self._cache[1][:length], self._cache[2][:length]


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Apply RoPE to x (B, H, T, D) with tables (T, D)."""
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin
