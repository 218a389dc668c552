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

from research.config.compose import compose_all
from research.config.validate import validate
from research.models.configs import rope_parameters
from research.models.transformer import CausalLanguageModel
from research.models.transformer.positions import RotaryEmbedding
from research.run.build import build_task

SCRIPT = Path(__file__).parents[2] / "experiments" / "context_extension" / "evaluate.py"
spec = importlib.util.spec_from_file_location("context_extension_evaluate", SCRIPT)
evaluate = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = evaluate  # its dataclass looks its module up while being built
spec.loader.exec_module(evaluate)
from position_loss import context_use, window_losses  # noqa: E402 - on the path evaluate set

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


def test_metric_names_and_table_name_the_scale_per_length():
    metrics = {"test/ppl": 10.0, "test/ppl@256": 12.0, "test/ppl@128": 11.0}
    assert evaluate.ppl_at(metrics, 128, 128) == 10.0
    assert evaluate.ppl_at(metrics, 128, 256) == 12.0
    assert evaluate.ppl_at(metrics, 512, 128) == 11.0  # a run fine-tuned at 512
    trained = evaluate.Row("rope, as trained")
    trained.ppl.update({128: [10.0, 12.0], 256: [20.0, 22.0]})
    tuned = evaluate.Row("rope + dynamic", steps=50)
    tuned.ppl.update({128: [9.0], 256: [8.0]})
    tuned.scale.update({128: 1.0, 256: 2.0})
    rows = {row.name: row for row in (trained, tuned)}
    lines = evaluate.table(rows).splitlines()
    assert lines[0] == "| method | scale at 128/256 | n | ppl@128 | ppl@256 |"
    assert "| rope, as trained | none | 2 | 11.00 ± 1.41 | 21.00 ± 1.41 |" in lines
    assert "| rope + dynamic, fine-tuned 50 steps at 4L | 1/2 | 1 | 9.00 | 8.00 |" in lines
    saved = evaluate.as_json(rows)["rope + dynamic, fine-tuned 50 steps at 4L"]
    assert saved == {
        "steps": 50,
        "scale": {"128": 1.0, "256": 2.0},
        "ppl": {"128": [9.0], "256": [8.0]},
    }


def _windows(n_windows: int, n: int, slope: float, seed: int = 0) -> np.ndarray:
    """Synthetic per-window losses: a window difficulty, noise, and a fall of `slope` nats per
    doubling of the context."""
    rng = np.random.default_rng(seed)
    positions = np.arange(n)
    difficulty = rng.normal(3.0, 0.5, (n_windows, 1))
    return difficulty - slope * np.log2(positions + 1) + rng.normal(0, 1.0, (n_windows, n))


def test_criterion_decides_on_losses_that_fall_or_stay_flat():
    falling = context_use(_windows(300, 64, slope=0.2))
    assert falling.uses_whole_context and falling.low > 0 and falling.windows == 300
    assert falling.gain == pytest.approx(falling.third_quarter - falling.last_quarter)
    flat = [context_use(_windows(300, 64, slope=0.0, seed=s)).uses_whole_context for s in range(20)]
    assert sum(flat) <= 2  # a 95% interval: about one in 40 lower ends above 0 by chance
    # Falling only over the first half of the positions: the far half of the context is unused.
    losses = _windows(300, 64, slope=0.2)
    losses[:, 32:] = losses[:, 32:] + 0.2 * (np.log2(np.arange(32, 64) + 1) - np.log2(33))
    assert losses[:, :16].mean() > losses[:, 16:32].mean() + 0.1 > losses[:, 32:].mean()
    assert not context_use(losses).uses_whole_context
    # Too few windows to tell a small fall from noise; one window gives no interval at all.
    assert not context_use(_windows(5, 64, slope=0.01)).uses_whole_context
    single = context_use(_windows(1, 64, slope=1.0))
    assert not single.uses_whole_context and np.isnan(single.low)
    with pytest.raises(ValueError, match="windows x positions"):
        context_use(np.zeros(8))


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
    from research.data.language_model import Windows

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

    losses = {L: torch.from_numpy(_windows(200, L, slope=1.0))}
    curves = summary(losses)
    write_curves(curves, "a model", tmp_path, "as-trained")
    saved = json.loads((tmp_path / "as-trained.json").read_text())
    assert len(saved[str(L)]["curve"]) == L and saved[str(L)]["windows"] == 200
    assert saved[str(L)]["uses_whole_context"] is True
    assert (tmp_path / "as-trained.png").stat().st_size > 1000
