"""The encoder against torch's reference layer, and the position schemes against their formulas."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from research.models.transformer import SequenceClassifier, TransformerEncoder
from research.models.transformer.attention import SelfAttention
from research.models.transformer.block import EncoderBlock
from research.models.transformer.positions import (
    RotaryEmbedding,
    rope_frequencies,
    rotate,
    sinusoidal_table,
)

D, H, FF = 32, 4, 64


def _pair(norm: str, activation: str) -> tuple[EncoderBlock, nn.TransformerEncoderLayer]:
    torch.manual_seed(0)
    ours = EncoderBlock(SelfAttention(D, H), D, FF, 0.0, norm, "layernorm", activation)
    ref = nn.TransformerEncoderLayer(
        D, H, FF, 0.0, activation, batch_first=True, norm_first=norm == "pre"
    )
    with torch.no_grad():
        att = ours.attention
        ref.self_attn.in_proj_weight.copy_(att.qkv.weight)
        ref.self_attn.in_proj_bias.copy_(att.qkv.bias)
        ref.self_attn.out_proj.load_state_dict(att.out.state_dict())
        for name in ("linear1", "linear2", "norm1", "norm2"):
            getattr(ref, name).load_state_dict(getattr(ours, name).state_dict())
    return ours.eval(), ref.eval()


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_blocks_equal_torch_transformer_encoder_layer(norm: str, activation: str):
    ours, ref = _pair(norm, activation)
    x = torch.randn(3, 7, D)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 5:] = False
    # Grad enabled keeps torch off its fused fast path, which differs by ~1e-6.
    expected = ref(x, src_key_padding_mask=~mask)
    got = ours(x, mask)
    assert torch.allclose(got[mask], expected[mask], atol=1e-5)
    assert torch.allclose(ours(x), ref(x), atol=1e-5)


def test_sinusoidal_table_matches_the_formula():
    table = sinusoidal_table(50, 16)
    for pos, i in [(0, 0), (3, 2), (17, 5), (49, 7)]:
        angle = pos / 10000 ** (2 * i / 16)
        assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def _scores(rotary: RotaryEmbedding, q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
    cos, sin = rotary.tables(max(m, n) + 1, q.device)
    qm = rotate(q.expand(1, 1, max(m, n) + 1, -1), cos, sin)[0, 0, m]
    kn = rotate(k.expand(1, 1, max(m, n) + 1, -1), cos, sin)[0, 0, n]
    return float(qm @ kn)


def test_rope_scores_depend_only_on_relative_position():
    torch.manual_seed(0)
    rotary = RotaryEmbedding(16)
    q, k = torch.randn(16, dtype=torch.float64).float(), torch.randn(16)
    for shift in (0, 5, 40):
        assert _scores(rotary, q, k, 3 + shift, 1 + shift) == pytest.approx(
            _scores(rotary, q, k, 3, 1), abs=1e-4
        )


def test_linear_scaling_encodes_s_times_p_as_p():
    plain, scaled = (
        RotaryEmbedding(16),
        RotaryEmbedding(16, scaling={"type": "linear", "factor": 4}),
    )
    cos_p, sin_p = plain.tables(10, torch.device("cpu"))
    cos_s, sin_s = scaled.tables(40, torch.device("cpu"))
    assert torch.allclose(cos_s[::4], cos_p, atol=1e-6) and torch.allclose(
        sin_s[::4], sin_p, atol=1e-6
    )


def test_ntk_follows_its_formula():
    d, s, base = 16, 4.0, 10000.0
    ntk, scale = rope_frequencies(d, base, {"type": "ntk", "factor": s})
    expected = (base * s ** (d / (d - 2))) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    assert torch.allclose(ntk, expected.float()) and scale == 1.0


@pytest.mark.parametrize("position", ["none", "sinusoidal", "learned", "rope"])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_padding_does_not_change_real_positions(position: str, norm: str):
    torch.manual_seed(0)
    model = TransformerEncoder(
        vocab_size=30, d_model=D, n_layers=2, n_heads=H, position=position, norm=norm, dropout=0.0
    ).eval()
    ids = torch.randint(1, 30, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    mask = (padded != 0).long()
    assert torch.allclose(model(ids)[0], model(padded, mask)[0, :6], atol=1e-5)


def test_grouped_and_multi_query_attention():
    x = torch.randn(2, 5, D)
    for kv in (4, 2, 1):
        attention = SelfAttention(D, H, n_kv_heads=kv)
        assert attention.qkv.out_features == D + 2 * kv * D // H
        assert attention(x).shape == x.shape


def test_mean_pooling_ignores_padding_and_cls_uses_the_first_token():
    torch.manual_seed(0)
    model = SequenceClassifier(
        num_classes=3, pooling="mean", vocab_size=30, d_model=D, n_layers=1, n_heads=H, dropout=0.0
    )
    model.eval()
    ids = torch.randint(1, 30, (1, 5))
    padded = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    assert torch.allclose(model(ids), model(padded, (padded != 0).long()), atol=1e-5)


def test_last_pooling_reads_each_rows_last_real_token():
    torch.manual_seed(0)
    model = SequenceClassifier(
        num_classes=3, pooling="last", vocab_size=30, d_model=D, n_layers=1, n_heads=H, dropout=0.0
    ).eval()
    short, full = torch.randint(1, 30, (1, 5)), torch.randint(1, 30, (1, 8))
    batch = torch.cat([torch.cat([short, torch.zeros(1, 3, dtype=torch.long)], 1), full])
    got = model(batch, (batch != 0).long())
    # Each row alone, unpadded, is read at its final position.
    for row, ids in enumerate((short, full)):
        expected = model.head(model.encoder(ids)[:, -1])
        assert torch.allclose(got[row], expected[0], atol=1e-5)
    # A padded position (the batch's last column) would give a different answer.
    padded_end = model.head(model.encoder(batch, (batch != 0).long())[0, -1])
    assert not torch.allclose(got[0], padded_end, atol=1e-3)


def test_embedding_std_sets_token_and_learned_position_tables_only():
    torch.manual_seed(0)
    model = TransformerEncoder(
        vocab_size=2000, d_model=64, n_layers=2, n_heads=H, position="learned", embedding_std=1.0
    )
    assert model.embed.weight[1:].std().item() == pytest.approx(1.0, abs=0.02)
    assert model.learned.weight.std().item() == pytest.approx(1.0, abs=0.05)
    assert model.embed.weight[0].abs().sum() == 0  # the padding row stays zero
    qkv = model.blocks[0].attention.qkv.weight
    assert qkv.std().item() == pytest.approx(0.02, abs=0.002)


@pytest.mark.parametrize("n_layers", [2, 8])
def test_xavier_init_is_glorot_normal_without_depth_scaling(n_layers: int):
    torch.manual_seed(0)
    model = TransformerEncoder(
        vocab_size=2000, d_model=128, n_layers=n_layers, n_heads=H, init="xavier"
    )
    block = model.blocks[-1]
    # var = 2 / (fan_in + fan_out): 1/d for the square output projection, 2/(5d) for the FFN.
    assert block.attention.out.weight.std().item() == pytest.approx(128**-0.5, rel=0.03)
    assert block.linear2.weight.std().item() == pytest.approx((2 / 640) ** 0.5, rel=0.03)
    assert model.embed.weight[1:].std().item() == pytest.approx(0.02, rel=0.03)


def test_pre_norm_residual_stream_grows_with_depth_under_xavier_init_only():
    """Xiong et al. (2020)'s premise: the pre-norm stream's norm grows like sqrt(n_layers) under
    Xavier init; GPT-2's 1/sqrt(2 n_layers) scaling keeps it flat."""

    def stream_std(n_layers: int, init: str) -> float:
        torch.manual_seed(0)
        model = TransformerEncoder(
            vocab_size=1000, d_model=64, n_layers=n_layers, n_heads=4, dropout=0.0, init=init
        )
        model.final_norm = nn.Identity()
        with torch.no_grad():
            return model(torch.randint(1, 1000, (4, 32))).std().item()

    assert 1.6 < stream_std(16, "xavier") / stream_std(4, "xavier") < 3.0
    assert stream_std(16, "gpt2") / stream_std(4, "gpt2") < 1.3


def test_depth_keeps_activation_variance_near_one():
    torch.manual_seed(0)
    model = TransformerEncoder(
        vocab_size=1000, d_model=64, n_layers=12, n_heads=4, norm="pre", dropout=0.0
    )
    model.final_norm = nn.Identity()
    with torch.no_grad():
        model.embed.weight.normal_(0.0, 1.0)
        hidden = model(torch.randint(1, 1000, (4, 64)))
    assert 0.8 < hidden.std().item() < 1.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"norm": "middle"}, "norm='middle' is not valid; choose one of: post, pre"),
        ({"position": "abs"}, "position='abs' is not valid"),
        ({"activation": "tanh"}, "activation='tanh' is not valid"),
        ({"norm_type": "batchnorm"}, "norm_type='batchnorm' is not valid"),
        ({"d_model": 30, "n_heads": 4}, "d_model=30 must be divisible by n_heads=4"),
        ({"n_kv_heads": 3}, "n_kv_heads=3 must divide n_heads=4"),
        ({"rope_scaling": {"type": "magic"}}, "rope_scaling.type='magic' is not valid"),
        ({"rope_scaling": {"rope_type": "llama3"}}, "rope_type='llama3' is not valid; choose"),
        ({"rope_scaling": {"rope_type": "yarn", "factor": 2}}, "original_max_position_embeddings"),
        ({"rope_scaling": {"rope_type": "linear", "scale": 2}}, "scale is not a rope_scaling key"),
        (
            {"rope_scaling": {"type": "yarn", "rope_type": "ntk", "factor": 2}},
            "rope_type='ntk' contradicts rope_type='yarn'",
        ),
        (
            {"rope_scaling": {"type": "yarn", "factor": 2, "original_max_len": 8, "beta_fast": 1}},
            "beta_fast must be > beta_slow",
        ),
        ({"rope_scaling": {"type": "linear", "factor": 0.5}}, "factor=0.5 must be a number >= 1"),
        ({"embedding_std": 0.0}, "embedding_std=0.0 is out of range; it must be > 0.0"),
        ({"init": "kaiming"}, "init='kaiming' is not valid; choose one of: gpt2, xavier"),
    ],
)
def test_invalid_choices_fail_in_one_line(kwargs: dict, message: str):
    options = {"vocab_size": 10, "d_model": D, "n_heads": H, "n_layers": 1, **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as err:
        TransformerEncoder(**options)
    assert "\n" not in str(err.value)
