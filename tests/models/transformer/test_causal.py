"""Causal attention: no position attends to a later one, with and without key padding."""

from __future__ import annotations

import pytest
import torch

from research.models.transformer import CausalLanguageModel, TransformerEncoder

D, H = 32, 4


@pytest.mark.parametrize("position", ["none", "sinusoidal", "learned", "rope"])
@pytest.mark.parametrize("padded", [False, True])
def test_changing_a_later_token_leaves_earlier_outputs_bit_identical(position: str, padded: bool):
    torch.manual_seed(0)
    model = TransformerEncoder(
        vocab_size=50, d_model=D, n_layers=2, n_heads=H, position=position, causal=True, dropout=0
    ).eval()
    ids = torch.randint(1, 50, (2, 12))
    mask = torch.ones_like(ids)
    if padded:
        mask[0, 9:] = 0  # the masked path (explicit boolean mask), not SDPA's is_causal
    changed = ids.clone()
    changed[:, 6] = (ids[:, 6] % 49) + 1
    with torch.no_grad():
        before, after = model(ids, mask), model(changed, mask)
    assert torch.equal(before[:, :6], after[:, :6])
    assert not torch.allclose(before[:, 6:9], after[:, 6:9])  # later positions do see it


def test_the_encoder_without_causal_sees_later_tokens():
    torch.manual_seed(0)
    model = TransformerEncoder(vocab_size=50, d_model=D, n_layers=1, n_heads=H, dropout=0).eval()
    ids = torch.randint(1, 50, (1, 8))
    changed = ids.clone()
    changed[0, 7] = (ids[0, 7] % 49) + 1
    with torch.no_grad():
        assert not torch.allclose(model(ids)[:, :7], model(changed)[:, :7])


def test_padding_matches_the_unpadded_causal_model_and_never_gives_nan():
    torch.manual_seed(0)
    model = TransformerEncoder(
        vocab_size=50, d_model=D, n_layers=2, n_heads=H, causal=True, dropout=0
    ).eval()
    ids = torch.randint(1, 50, (1, 7))
    left = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], dim=1)
    mask = (left != 0).long()
    with torch.no_grad():
        out = model(left, mask)
        alone = model(ids)
    assert not out.isnan().any()  # padded queries at the start attend to themselves
    # Left padding with RoPE shifts absolute positions but not relative ones.
    assert torch.allclose(out[:, 3:], alone, atol=1e-5)


def test_causal_lm_ties_its_head_and_refuses_non_causal_attention():
    model = CausalLanguageModel(vocab_size=40, d_model=D, n_heads=H, n_layers=1)
    assert model.head.weight is model.encoder.embed.weight
    assert model(torch.randint(1, 40, (2, 5))).shape == (2, 5, 40)
    with pytest.raises(ValueError, match="causal=False would let each position see") as err:
        CausalLanguageModel(vocab_size=40, d_model=D, n_heads=H, causal=False)
    assert "\n" not in str(err.value)
