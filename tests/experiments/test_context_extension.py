"""The context-extension study's evaluation step: the overrides it passes to research-eval and
research-train mean the same scaling to both, every row applies the scale it names (dynamic NTK
included), the per-position loss and its criterion, and the fine-tuning budgets' plumbing."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf
from torch.nn import functional

from research.config.compose import compose_all
from research.config.validate import validate
from research.data.language_model import Windows
from research.models.configs import rope_parameters
from research.models.transformer import CausalLanguageModel
from research.models.transformer.positions import RotaryEmbedding
from research.run.build import build_task

SCRIPT = Path(__file__).parents[2] / "experiments" / "context_extension" / "evaluate.py"
spec = importlib.util.spec_from_file_location("context_extension_evaluate", SCRIPT)
evaluate = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = evaluate  # its dataclass looks its module up while being built
spec.loader.exec_module(evaluate)
from position_loss import (  # noqa: E402 - on the path evaluate set
    context_use,
    truncated_losses,
    window_losses,
)

EXPECTED = {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 128}
L = 16  # the original (training) length of the small models below


def _block(override: str) -> dict:
    """The rope_scaling mapping an override sets, read as research-eval reads it."""
    saved = OmegaConf.create({"model": {"net": {"rope_scaling": None}}})
    saved.merge_with_dotlist([override])
    return OmegaConf.to_container(saved.model.net.rope_scaling)


def test_scaling_override_means_the_same_to_eval_and_train():
    (override,) = evaluate.scaling_overrides("yarn", 4, 128)
    assert _block(override) == EXPECTED
    (parsed,) = OverridesParser.create().parse_overrides([override])  # research-train's grammar
    assert parsed.value() == EXPECTED
    assert rope_parameters(EXPECTED)["rope_type"] == "yarn"


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_every_row_applies_scale_k_at_kL_and_dynamic_equals_ntk_there(k: int):
    for method in evaluate.SCALINGS:
        factor = evaluate.row_factor(method, k * L, L)
        assert evaluate.effective_scale(method, factor, L, k * L) == k, method
    factor = evaluate.row_factor("dynamic", k * L, L)
    (override,) = evaluate.scaling_overrides("dynamic", factor, L)
    dynamic = RotaryEmbedding(32, scaling=_block(override))
    ntk = RotaryEmbedding(32, scaling={"rope_type": "ntk", "factor": k})
    cpu = torch.device("cpu")
    for got, want in zip(dynamic.tables(k * L, cpu), ntk.tables(k * L, cpu), strict=True):
        assert torch.allclose(got, want, rtol=0, atol=1e-6)
    # The network's own path: the same weights give the same logits at kL.
    nets = [
        CausalLanguageModel(
            vocab_size=50, d_model=64, n_heads=2, n_layers=1, rope_scaling=block, dropout=0.0
        )
        for block in (_block(override), {"rope_type": "ntk", "factor": k})
    ]
    nets[1].load_state_dict(nets[0].state_dict())
    ids = torch.randint(0, 50, (2, k * L))
    with torch.no_grad():
        assert torch.allclose(nets[0](ids), nets[1](ids), atol=1e-5)


def test_dynamic_at_factor_k_is_not_scale_k():
    # What the study's first run did: factor k at kL applies k^2 - k + 1 (3 at 2L, 13 at 4L).
    assert evaluate.effective_scale("dynamic", 4, L, 4 * L) == 13
    stretched = RotaryEmbedding(
        32, scaling={"rope_type": "dynamic", "factor": 4, "original_max_position_embeddings": L}
    )
    at_13 = RotaryEmbedding(32, scaling={"rope_type": "ntk", "factor": 13})
    cpu = torch.device("cpu")
    assert torch.allclose(stretched.tables(4 * L, cpu)[0], at_13.tables(4 * L, cpu)[0], atol=1e-6)


def test_metric_names_per_length():
    metrics = {"test/ppl": 10.0, "test/ppl@256": 12.0, "test/ppl@128": 11.0}
    assert evaluate.ppl_at(metrics, 128, 128) == 10.0
    assert evaluate.ppl_at(metrics, 128, 256) == 12.0
    assert evaluate.ppl_at(metrics, 512, 128) == 11.0  # a run fine-tuned at 512


def _reads(n_windows: int, n: int, gain: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic losses of the same windows read whole (windows x n) and from n/2 on (windows x
    (n - n // 2)): each target's own difficulty (large, shared by both reads), and in the
    truncated read `gain` nats more plus read-to-read noise."""
    rng = np.random.default_rng(seed)
    full = rng.normal(3.0, 2.0, (n_windows, n))
    truncated = full[:, n // 2 :] + gain + rng.normal(0, 0.3, (n_windows, n - n // 2))
    return full, truncated


def test_criterion_pairs_the_same_targets_so_their_difficulty_cancels():
    # A gain far below the targets' spread (2 nats) is found: only the reads' noise counts.
    full, truncated = _reads(300, 64, gain=0.05)
    found = context_use(full, truncated)
    assert found.uses_whole_context and found.low > 0 and found.windows == 300
    assert found.gain == pytest.approx(found.loss_truncated - found.loss_full)
    assert found.loss_full == pytest.approx(full[:, 48:].mean())
    assert found.loss_truncated == pytest.approx(truncated[:, 16:].mean())
    # The truncated read's first half (targets before 3n/4) does not count.
    full, truncated = _reads(300, 64, gain=0.0)
    truncated[:, :16] += 5.0
    assert abs(context_use(full, truncated).gain) < 0.1
    # No gain: a 95% interval's lower end is above 0 by chance about one time in 40.
    met = [context_use(*_reads(300, 64, gain=0.0, seed=s)).uses_whole_context for s in range(20)]
    assert sum(met) <= 2
    # A loss from dropping the far half (a negative gain) is not use of it.
    assert not context_use(*_reads(300, 64, gain=-0.1)).uses_whole_context
    # One window gives no interval at all, and the criterion is not met.
    single = context_use(*_reads(1, 64, gain=1.0))
    assert not single.uses_whole_context and np.isnan(single.low)


def test_criterion_rejects_shapes_that_do_not_pair():
    full, truncated = _reads(10, 16, gain=0.0)
    with pytest.raises(ValueError, match="full losses must be windows x n positions"):
        context_use(full[0], truncated)
    with pytest.raises(ValueError, match="n >= 4"):
        context_use(full[:, :3], truncated[:, :2])
    with pytest.raises(ValueError, match=r"truncated losses must be .* \(10, 8\)"):
        context_use(full, full)  # the whole window twice: no column pairs with its target
    with pytest.raises(ValueError, match=r"got shape \(9, 8\)"):
        context_use(full, truncated[:9])
    # Odd n: the truncated read starts at n // 2 and holds n - n // 2 positions.
    full, truncated = _reads(50, 13, gain=0.5)
    assert truncated.shape == (50, 7) and context_use(full, truncated).uses_whole_context


class _Copy(torch.nn.Module):
    """A fixed "model" that predicts the token `back` positions before the target (confident
    logits), and is uniform when that token is not in its input: it uses exactly `back` tokens
    of context."""

    def __init__(self, back: int, vocab: int) -> None:
        super().__init__()
        self.back, self.vocab = back, vocab

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(*ids.shape, self.vocab)
        source = torch.arange(ids.shape[1]) + 1 - self.back  # input t predicts token t + 1
        seen = source >= 0
        copied = functional.one_hot(ids[:, source[seen]], self.vocab).float()
        logits[:, seen] = 4.0 * copied
        return logits


def _repeating(n_windows: int, n: int, period: int, vocab: int = 8) -> Windows:
    """Test windows of a stream that repeats the token `period` back with probability 0.8."""
    rng = np.random.default_rng(0)
    stream = rng.integers(0, vocab, n_windows * n + 1)
    for i in range(period, len(stream)):
        if rng.random() < 0.8:
            stream[i] = stream[i - period]
    return Windows(stream, n, n_windows * n)


def test_criterion_on_models_that_reach_far_back_or_not():
    n, vocab = 32, 8
    windows = _repeating(64, n, period=n // 2 + 1)

    def verdict(net: torch.nn.Module):
        return context_use(window_losses(net, windows, 16), truncated_losses(net, windows, 16))

    # Copies from n/2 + 1 back: the truncated read (at most n/2 tokens) never sees the source.
    far = verdict(_Copy(n // 2 + 1, vocab))
    assert far.uses_whole_context and far.windows == 64
    assert far.low > 0.5 and far.loss_truncated == pytest.approx(np.log(vocab))
    # Only the previous token, or n/4 tokens (every truncated target still has n/4 + 1): both
    # reads give the same logits for the same targets, so the gain is exactly 0 and there is
    # no interval. An off-by-one pairing of the two reads would make these gains nonzero.
    for back in (1, n // 4):
        near = verdict(_Copy(back, vocab))
        assert near.gain == pytest.approx(0.0, abs=1e-12), back
        assert not near.uses_whole_context and np.isnan(near.low), back


def _small_task():
    overrides = [
        "experiment=context_extension",
        "model.net.d_model=32",
        "model.net.n_heads=1",
        "model.net.n_layers=1",
        "data.vocab_size=300",
        f"data.context={L}",
        f"data.eval_lengths=[{2 * L}]",
        "data.batch_size=4",
    ]
    config = validate(compose_all("train", overrides, single=True)[0], entry="train")
    return build_task(config)[1]


def test_per_position_loss_averages_to_the_task_mean_loss():
    torch.manual_seed(0)
    task = _small_task()
    stream = np.random.default_rng(0).integers(0, 300, 20 * L + 1)
    for n in (L, 2 * L):
        windows = Windows(stream, n, 20 * L)
        losses = window_losses(task.net, windows, batch_size=3)
        assert losses.shape == (len(windows), n)
        with torch.no_grad():  # the task's own loss and token-weighted mean (its test/loss)
            metric = task.losses["test_0"]
            metric.reset()
            for start in range(0, len(windows), 3):
                batch = torch.stack(
                    [windows[i] for i in range(start, min(start + 3, len(windows)))]
                )
                task._step({"input_ids": batch}, "test_0")
            assert losses.mean().item() == pytest.approx(metric.compute().item(), rel=1e-5)
        assert not torch.allclose(losses.mean(0), losses.mean())  # a curve, not a constant


def test_finetune_budgets_option():
    assert evaluate.parser().parse_args([]).finetune_steps == [25, 50, 100, 200]
    assert evaluate.budgets("200,25,50") == [25, 50, 200]
    assert evaluate.budgets("0") == []
    for bad in ("ten", "25,-5", "0,25", ""):
        with pytest.raises(SystemExit):
            evaluate.parser().parse_args(["--finetune-steps", bad])


@pytest.mark.slow
def test_finetune_command_composes_per_budget_and_scaling(tmp_path: Path):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    (tmp_path / "run" / "checkpoints" / "best.ckpt").touch()  # init_from must name a file
    run = {
        "run_id": "abc-s1",
        "seed": 1,
        "run_dir": str(tmp_path / "run"),
        "best": {"checkpoint": "checkpoints/best.ckpt"},
        "config": {
            "data": {"context": 128, "batch_size": 16, "eval_lengths": [256, 512, 1024]},
            "model": {"net": {"position": "rope"}},
            "optimizer": {"lr": 0.002},
        },
    }
    for steps, method in ((25, "dynamic"), (200, "yarn"), (50, "none")):
        command = evaluate.finetune_command(run, method, steps, tmp_path / "ft")
        assert Path(command[0]).name == "research-train"
        overrides = [o for o in command[1:] if not o.startswith("hydra.")]
        config = validate(compose_all("train", overrides, single=True)[0], entry="train")
        assert config["trainer"]["limit_train_batches"] == steps
        assert config["trainer"]["max_epochs"] == 1
        assert config["data"]["context"] == 512 and config["data"]["batch_size"] == 4
        scaling = rope_parameters(config["model"]["net"]["rope_scaling"])
        factor = {"dynamic": 1.0, "yarn": 4.0}.get(method)
        assert scaling.get("factor") == factor and scaling["rope_type"] == method
        assert config["variant"] == f"finetune{steps}_{method}"
        scales = [evaluate.effective_scale(method, factor or 1, 128, n) for n in (128, 512, 1024)]
        assert scales == {"dynamic": [1, 4, 8], "yarn": [4, 4, 4], "none": [1, 1, 1]}[method]


def test_position_curves_summary_is_json(tmp_path: Path):
    from position_loss import summary, write_curves

    full, truncated = _reads(200, L, gain=1.0)
    full2, _ = _reads(100, 2 * L, gain=0.0)
    losses = {L: torch.from_numpy(full), 2 * L: torch.from_numpy(full2)}
    curves = summary(losses, {L: torch.from_numpy(truncated)})
    write_curves(curves, "a model", tmp_path, "as-trained")
    saved = json.loads((tmp_path / "as-trained.json").read_text())
    assert len(saved[str(L)]["curve"]) == L and saved[str(L)]["windows"] == 200
    assert saved[str(L)]["uses_whole_context"] is True and saved[str(L)]["loss_truncated"] > 0
    # The criterion only where a truncated read was given; the curve and windows everywhere.
    assert set(saved[str(2 * L)]) == {"curve", "windows"} and saved[str(2 * L)]["windows"] == 100
    assert (tmp_path / "as-trained.png").stat().st_size > 1000
