"""`model.compile`: refused in one line where it cannot work; in place, so checkpoints written
with and without it load either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from research.config.errors import ConfigError
from research.models.transformer import CausalLanguageModel
from research.optim.factory import OptimizerFactory
from research.tasks.causal_lm import CausalLMModule
from research.tasks.compile import compile_net
from tests.helpers.cli import run_cli

CPU = torch.device("cpu")


def task(**params: Any) -> CausalLMModule:
    torch.manual_seed(0)
    net = CausalLanguageModel(
        vocab_size=50, d_model=16, n_heads=2, n_layers=1, max_len=16, position="learned"
    )
    optimizer: OptimizerFactory = lambda p: torch.optim.AdamW(p, lr=1e-2)  # noqa: E731
    return CausalLMModule(net=net, loss=None, optimizer=optimizer, **params)


def test_compile_mode_without_compile_is_refused_in_one_line(tmp_path: Path):
    done = run_cli(
        "research-train", "model.compile_mode=max-autotune", "--cfg", "job", cwd=tmp_path
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "research-train: error: model.compile_mode=max-autotune applies only when compiling; "
        "add model.compile=true"
    )
    done = run_cli("research-train", "model.compile_mode=fast", "--cfg", "job", cwd=tmp_path)
    assert done.returncode == 2 and "choose one of: default, reduce-overhead" in done.stderr


def test_compile_settings_leave_run_ids_alone_until_set():
    from research.tasks.configs import ClassificationConfig, RetrievalConfig

    for schema in (ClassificationConfig, RetrievalConfig):
        assert schema.defaults()["compile"] is False
        assert schema.build(None, {"compile": True, "compile_mode": "reduce-overhead"}).compile


def test_no_cpp_compiler_is_refused_in_one_line():
    from torch._inductor import config

    net = nn.Linear(3, 2)
    with config.patch({"cpp.cxx": (None, "no-such-g++")}), pytest.raises(ConfigError) as err:
        compile_net(net, "default", CPU)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("model.compile=true cannot work on cpu: ")
    assert "looked for no-such-g++" in message and "model.compile=false" in message
    assert net(torch.ones(1, 3)).shape == (1, 2)  # left as it was: eager


def _batches(count: int) -> DataLoader:
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 50, (count * 2, 9), generator=generator)
    return DataLoader([{"input_ids": row} for row in ids], batch_size=2)


def _trainer(root: Path, steps: int) -> L.Trainer:
    return L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(root),
    )


@pytest.mark.slow
def test_compiled_run_resumes_a_plain_checkpoint_and_writes_one_a_plain_net_loads(
    tmp_path: Path,
):
    plain_run = _trainer(tmp_path, 1)
    plain_run.fit(task(), _batches(3))
    plain_run.save_checkpoint(tmp_path / "plain.ckpt")

    compiled = task(compile=True)
    compiled_run = _trainer(tmp_path, 2)
    compiled_run.fit(compiled, _batches(3), ckpt_path=tmp_path / "plain.ckpt")
    assert compiled.net_compiled and compiled_run.global_step == 2
    compiled_run.save_checkpoint(tmp_path / "compiled.ckpt")

    state = torch.load(tmp_path / "compiled.ckpt", weights_only=True)["state_dict"]
    assert not any("_orig_mod" in key for key in state)
    reloaded = task(init_from=str(tmp_path / "compiled.ckpt"))
    ids = torch.randint(1, 50, (2, 8))
    compiled.eval()
    with torch.no_grad():
        torch.testing.assert_close(compiled.net(ids), reloaded.net.eval()(ids))
