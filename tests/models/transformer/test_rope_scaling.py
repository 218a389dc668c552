"""RoPE scaling equals HF transformers' reference (`modeling_rope_utils`), which every hub model
with a `rope_scaling` block runs: the inverse frequencies and the attention factor."""

from __future__ import annotations

import pytest
import torch

from research.models.transformer.positions import RotaryEmbedding, rope_frequencies

# (head_dim, base, factor, original length): small and large heads, bases, factors.
CASES = [
    (16, 10000.0, 2.0, 64),
    (32, 10000.0, 4.0, 128),
    (64, 500000.0, 8.0, 2048),
    (128, 10000.0, 16.0, 4096),
    (64, 1000.0, 3.0, 256),
]


def hf_frequencies(
    kind: str, head_dim: int, base: float, params: dict, max_positions: int, length: int | None
) -> tuple[torch.Tensor, float]:
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = LlamaConfig(
        hidden_size=head_dim * 2,
        num_attention_heads=2,
        max_position_embeddings=max_positions,
        rope_parameters={"rope_type": kind, "rope_theta": base, **params},
    )
    return ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=length)


@pytest.mark.parametrize(("head_dim", "base", "factor", "original"), CASES)
def test_yarn_equals_transformers(head_dim: int, base: float, factor: float, original: int):
    block = {"factor": factor, "original_max_position_embeddings": original}
    for extra in ({}, {"beta_fast": 16, "beta_slow": 2}, {"truncate": False}):
        params = {**block, **extra}
        hf, hf_factor = hf_frequencies("yarn", head_dim, base, params, 8 * original, None)
        ours, our_factor = rope_frequencies(head_dim, base, {"rope_type": "yarn", **block, **extra})
        assert torch.allclose(ours, hf, rtol=0, atol=1e-6), extra
        assert our_factor == pytest.approx(hf_factor, abs=1e-6)
    assert our_factor > 1.0  # the attention factor is really applied, not left at 1


@pytest.mark.parametrize(("head_dim", "base", "factor", "original"), CASES)
def test_linear_and_dynamic_equal_transformers(
    head_dim: int, base: float, factor: float, original: int
):
    hf, hf_factor = hf_frequencies("linear", head_dim, base, {"factor": factor}, original, None)
    ours, our_factor = rope_frequencies(head_dim, base, {"type": "linear", "factor": factor})
    assert torch.allclose(ours, hf, rtol=0, atol=1e-6) and our_factor == hf_factor == 1.0
    dynamic = {"type": "dynamic", "factor": factor, "original_max_position_embeddings": original}
    # HF's dynamic NTK reads the original length from max_position_embeddings.
    for length in (original // 2, original, 3 * original, 8 * original):
        hf, _ = hf_frequencies("dynamic", head_dim, base, {"factor": factor}, original, length)
        ours, _ = rope_frequencies(head_dim, base, dynamic, length)
        assert torch.allclose(ours, hf, rtol=0, atol=1e-6), length


def test_a_pasted_hub_block_builds_and_yarn_scales_cos_and_sin():
    # Qwen2.5's long-context block, as published in its model card.
    block = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}
    rotary = RotaryEmbedding(128, 1000000.0, block)
    cos, sin = rotary.tables(4, torch.device("cpu"))
    assert cos[0, 0].item() == pytest.approx(rotary.attention_scale)
    assert torch.allclose(cos**2 + sin**2, torch.full_like(cos, rotary.attention_scale**2))


def test_dynamic_tables_follow_the_length():
    rotary = RotaryEmbedding(
        16, scaling={"rope_type": "dynamic", "factor": 4, "original_max_position_embeddings": 8}
    )
    plain = RotaryEmbedding(16)
    short, _ = rotary.tables(8, torch.device("cpu"))
    assert torch.equal(short, plain.tables(8, torch.device("cpu"))[0])
    long, _ = rotary.tables(32, torch.device("cpu"))
    assert not torch.allclose(long[:8], short)  # a longer input stretches every position
    assert torch.equal(rotary.tables(8, torch.device("cpu"))[0], short)
