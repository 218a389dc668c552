"""Position information: sinusoidal and learned absolute tables, and rotary embeddings (RoPE).

RoPE here rotates the pairs (i, i + d/2) of each head ("rotate_half", as HF transformers does);
RoFormer's original pairs (2i, 2i + 1) are an equivalent permutation of the same rotation.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from research.models.configs import rope_parameters


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
    head_dim: int, base: float, scaling: dict | None, length: int | None = None
) -> tuple[torch.Tensor, float]:
    """Inverse frequencies and attention factor of RoPE under a scaling scheme, equal to HF
    transformers' `modeling_rope_utils` (tested against it), for sequences of `length` tokens.

    - linear: position interpolation (Chen et al. 2023), every frequency divided by the factor.
    - ntk: static "NTK-aware" scaling (bloc97, 2023), base multiplied by factor^(d / (d - 2)).
    - dynamic: HF's dynamic NTK: the NTK base for the length at hand, base * s^(d / (d - 2))
      with s = `dynamic_scale(factor, length, original)`; unchanged up to the original length.
    - yarn: YaRN (Peng et al. 2024), the authors' reference code as HF runs it: dimensions whose
      wavelength fits more than beta_fast rotations into the original context keep their
      frequency, those with fewer than beta_slow are interpolated (divided by the factor); the
      dimension indices of those bounds (floored / ceiled unless truncate is false) are joined
      by a ramp linear in the dimension index. cos and sin are scaled by the attention factor
      0.1 ln(factor) + 1 (or mscale / mscale_all_dim's ratio, or attention_factor if given).
    """
    params = rope_parameters(scaling)
    kind, factor = params["rope_type"], params.get("factor", 1.0)
    exponent = head_dim / (head_dim - 2)
    if kind == "ntk":
        base = base * factor**exponent
    elif kind == "dynamic":
        original = params["original_max_position_embeddings"]
        base = base * dynamic_scale(factor, length or original, original) ** exponent
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if kind == "linear":
        inv_freq = inv_freq / factor
    if kind != "yarn":
        return inv_freq.float(), 1.0
    low, high = _yarn_dims(head_dim, base, params)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    # ramp 0: extrapolate (keep the frequency); ramp 1: interpolate (divide by the factor).
    inv_freq = inv_freq * (1 - ramp) + inv_freq / factor * ramp
    return inv_freq.float(), _yarn_attention_factor(factor, params)


def dynamic_scale(factor: float, length: int, original: int) -> float:
    """The NTK scale dynamic NTK applies to a sequence of `length` tokens, as HF computes it:
    max(1, factor * length / original - (factor - 1)). The scale grows with the length; at
    factor 1 it is length / original (k at k times the original length), while factor k at that
    length gives k^2 - k + 1, not k."""
    return max(1.0, factor * length / original - (factor - 1))


def _yarn_dims(head_dim: int, base: float, params: dict) -> tuple[float, float]:
    """The dimension indices where a frequency turns `beta_fast` and `beta_slow` rotations over
    the original context (YaRN's correction range)."""
    original = params["original_max_position_embeddings"]

    def dim_of(rotations: float) -> float:
        return head_dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = dim_of(params.get("beta_fast") or 32), dim_of(params.get("beta_slow") or 1)
    if params.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    return low, high + 0.001 if low == high else high


def _yarn_attention_factor(factor: float, params: dict) -> float:
    if params.get("attention_factor") is not None:
        return float(params["attention_factor"])

    def mscale(scale: float, weight: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * weight * math.log(scale) + 1.0

    if params.get("mscale") and params.get("mscale_all_dim"):
        return mscale(factor, params["mscale"]) / mscale(factor, params["mscale_all_dim"])
    return mscale(factor)


class RotaryEmbedding(nn.Module):
    """cos/sin tables for RoPE, grown on demand when a longer sequence arrives (dynamic NTK:
    recomputed per length, since its frequencies depend on it)."""

    def __init__(self, head_dim: int, base: float = 10000.0, scaling: dict | None = None) -> None:
        super().__init__()
        self.head_dim, self.base, self.scaling = head_dim, base, scaling
        self.dynamic = rope_parameters(scaling)["rope_type"] == "dynamic"
        inv_freq, self.attention_scale = rope_frequencies(head_dim, base, scaling)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._cache: tuple[int, torch.Tensor, torch.Tensor] | None = None

    def tables(self, length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if torch.compiler.is_compiling():
            # Traced into the graph, where they cost a fused kernel: a cache is module state
            # the graph would guard on, and its inference-mode check breaks the graph in every
            # block (the whole encoder then ran eager under model.compile=true).
            return self._build(length, device)
        stale = self._cache is None or self._cache[1].device != device
        # Tables built under inference mode (validation) cannot enter autograd (training).
        stale = stale or (self._cache[1].is_inference() and not torch.is_inference_mode_enabled())
        if stale or (self._cache[0] != length if self.dynamic else self._cache[0] < length):
            self._cache = (length, *self._build(length, device))
        return self._cache[1][:length], self._cache[2][:length]

    def _build(self, length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin for positions 0..length-1."""
        inv_freq = self.inv_freq
        if self.dynamic:
            inv_freq, _ = rope_frequencies(self.head_dim, self.base, self.scaling, length)
        positions = torch.arange(length, device=device, dtype=torch.float32)
        angles = torch.outer(positions, inv_freq.to(device))
        angles = torch.cat([angles, angles], dim=-1)
        # YaRN's attention factor scales q and k alike, so q.k grows by its square.
        return angles.cos() * self.attention_scale, angles.sin() * self.attention_scale


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Apply RoPE to x (B, H, T, D) with tables (T, D)."""
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin
