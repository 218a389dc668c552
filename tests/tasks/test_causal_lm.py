"""The causal LM task: next-token loss, per-length perplexity, bits per byte, fine-tuning."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from torch import nn

from research.config.errors import ConfigError
from research.config.registry import declaration
from research.data.configs import LanguageModelDataConfig
from research.data.language_model import LanguageModelDataModule
from research.models.transformer import CausalLanguageModel
from research.optim.factory import OptimizerFactory
from research.tasks.causal_lm import CausalLMModule

WORDS = ["def", "return", "self", "import", "class", "value", "lambda", "yield"]


class Counting(LanguageModelDataModule):
    """A predictable text: the next word follows from the previous two."""

    name = "counting"

    def __init__(self, data_dir: str) -> None:
        super().__init__()
        self.config = LanguageModelDataConfig(
            data_dir=data_dir,
            vocab_size=300,
            context=16,
            eval_lengths=[32],
            eval_tokens=256,
            batch_size=8,
        )

    def source_facts(self) -> list[Any]:
        return ["counting-v1"]

    def documents(self) -> dict[str, list[str]]:
        def text(seed: int) -> str:
            return " ".join(WORDS[(seed + i * (i + 1) // 2) % len(WORDS)] for i in range(400))

        return {"train": [text(s) for s in range(40)], "val": [text(99)], "test": [text(7)]}


def task(**params: Any) -> CausalLMModule:
    torch.manual_seed(0)
    net = CausalLanguageModel(
        vocab_size=300, d_model=32, n_heads=2, n_layers=2, max_len=64, dropout=0.0
    )
    optimizer: OptimizerFactory = lambda p: torch.optim.AdamW(p, lr=3e-3)  # noqa: E731
    return CausalLMModule(net=net, loss=None, optimizer=optimizer, **params)


def trainer(root: Path, steps: int) -> L.Trainer:
    return L.Trainer(
        max_steps=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(root),
        num_sanity_val_steps=0,
    )


def test_loss_is_next_token_cross_entropy():
    module = task()
    ids = torch.randint(2, 300, (3, 9))
    logits = module.net(ids[:, :-1])
    expected = nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
    assert module._step({"input_ids": ids}, "train_0").item() == pytest.approx(expected.item())


def test_training_learns_and_logs_every_length(tmp_path: Path):
    data, module = Counting(str(tmp_path)), task()
    fit = trainer(tmp_path, 60)
    before = fit.validate(module, datamodule=data, verbose=False)[0]
    fit.fit(module, datamodule=data)
    after = fit.test(module, datamodule=data, verbose=False)[0]
    assert set(after) == {f"test/{m}{s}" for m in ("loss", "ppl", "bpb") for s in ("", "@32")}
    assert after["test/ppl"] == pytest.approx(math.exp(after["test/loss"]), rel=1e-4)
    bits = after["test/loss"] / math.log(2) / data.bytes_per_token["test"]
    assert after["test/bpb"] == pytest.approx(bits, rel=1e-4)
    assert before["val/ppl"] > 100 and after["test/ppl"] < 0.1 * before["val/ppl"]
    assert declaration("research.tasks.causal_lm.CausalLMModule").monitor in before


def test_init_from_starts_from_a_checkpoint_and_refuses_another_shape(tmp_path: Path):
    data, module = Counting(str(tmp_path)), task()
    fit = trainer(tmp_path, 3)
    fit.fit(module, datamodule=data)
    path = tmp_path / "trained.ckpt"
    fit.save_checkpoint(path)
    tuned = task(init_from=str(path))
    for name, value in module.net.state_dict().items():
        assert torch.equal(tuned.net.state_dict()[name], value), name
    wider = CausalLanguageModel(vocab_size=300, d_model=64, n_heads=2, n_layers=2, max_len=64)
    with pytest.raises(ConfigError, match="does not fit this network") as err:
        CausalLMModule(net=wider, loss=None, optimizer=lambda p: None, init_from=str(path))
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="init_from='nowhere.ckpt' is not a file"):
        task(init_from="nowhere.ckpt")
