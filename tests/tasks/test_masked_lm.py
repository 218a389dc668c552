"""BERT-style masking and the MLM module's loss on masked positions only."""

from __future__ import annotations

from functools import partial

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from research.config.registry import declaration
from research.models.transformer import MaskedLanguageModel
from research.tasks.masked_lm import IGNORE, MaskedLMModule, mask_tokens

SPECIAL = (0, 1, 2, 3, 4)


def test_masking_rate_and_80_10_10_split():
    torch.manual_seed(0)
    ids = torch.randint(5, 1000, (200, 500))
    ids[:, 0] = 2  # [CLS] is never masked
    attention = torch.ones_like(ids)
    attention[:, -50:] = 0  # nor is padding
    corrupted, labels = mask_tokens(ids, attention, 0.15, 4, 1000, SPECIAL)
    chosen = labels != IGNORE
    assert not chosen[:, 0].any() and not chosen[:, -50:].any()
    assert chosen.float().sum() / (200 * 449) == pytest.approx(0.15, abs=0.005)
    assert torch.equal(labels[chosen], ids[chosen])
    masked = (corrupted[chosen] == 4).float().mean()
    kept = (corrupted[chosen] == ids[chosen]).float().mean()
    assert masked == pytest.approx(0.8, abs=0.01)
    assert kept == pytest.approx(0.1 + 0.1 / 995, abs=0.01)  # a random swap can hit itself
    assert torch.equal(corrupted[~chosen], ids[~chosen])


def test_weight_tying_shares_the_embedding():
    model = MaskedLanguageModel(vocab_size=50, d_model=16, n_layers=1, n_heads=2)
    assert model.head.weight.data_ptr() == model.encoder.embed.weight.data_ptr()
    untied = MaskedLanguageModel(
        tie_weights=False, vocab_size=50, d_model=16, n_layers=1, n_heads=2
    )
    assert untied.head.weight.data_ptr() != untied.encoder.embed.weight.data_ptr()


@pytest.mark.slow
def test_module_learns_and_logs_masked_metrics():
    torch.manual_seed(0)
    net = MaskedLanguageModel(vocab_size=30, d_model=32, n_layers=1, n_heads=2, dropout=0.0)
    module = MaskedLMModule(
        net, None, partial(torch.optim.AdamW, lr=3e-3), vocab_size=30, mask_rate=0.3
    )
    ids = torch.arange(5, 25).repeat(64, 1)  # a fixed sequence: easy to fill in
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    batches = DataLoader([batch] * 4, batch_size=None)
    trainer = L.Trainer(
        max_epochs=25,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, batches, batches)
    metrics = trainer.callback_metrics
    assert {"train/loss_epoch", "val/loss", "val/acc", "val/ppl"} <= set(metrics)
    assert declaration("research.tasks.masked_lm.MaskedLMModule").monitor in metrics
    assert metrics["val/acc"] > 0.8  # chance is 1/30
    assert metrics["val/ppl"] == pytest.approx(torch.exp(metrics["val/loss"]).item(), rel=1e-4)
