"""The context-extension evaluation on a real (tiny) training run: the per-position curves it
writes average to the test loss the run recorded, at every length, and --check-context writes
the criterion per run without running any scaling or fine-tune."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hydra import initialize_config_dir

from research.config.paths import config_dir
from research.utils.engine_versions import version_base
from tests.run.test_fit import _job_config  # a run dir as Hydra's launcher prepares it

SCRIPT = Path(__file__).parents[2] / "experiments" / "context_extension" / "evaluate.py"
SMALL = [
    "experiment=context_extension",
    "model.net.position=rope",
    "model.net.d_model=32",
    "model.net.n_heads=1",
    "model.net.n_layers=1",
    "data.max_files=80",
    "data.vocab_size=400",
    "data.context=16",
    "data.eval_lengths=[32,64]",
    "data.eval_tokens=1024",
    "data.batch_size=8",
    "trainer.max_epochs=1",
    "trainer.limit_train_batches=5",
    "scheduler.warmup_steps=1",
    "logger=none",
    "trainer.enable_progress_bar=false",
]


def _evaluate_module():
    spec = importlib.util.spec_from_file_location("context_extension_evaluate_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_check_context_writes_curves_that_average_to_the_recorded_loss(tmp_path: Path):
    from research.run.fit import train

    root = tmp_path / "ablation"
    run_dir = root / "rope_s0"
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        assert train(_job_config("train", SMALL, run_dir)).status == "completed"
    recorded = json.loads((run_dir / "metrics.json").read_text())
    evaluate = _evaluate_module()
    records = tmp_path / "records"
    assert evaluate.main(["--root", str(root), "--records", str(records), "--check-context"]) == 0
    folder = root / "eval" / recorded["run_id"] / "positions"
    curves = json.loads((folder / "as-trained.json").read_text())
    assert set(curves) == {"16", "32", "64"} and (folder / "as-trained.png").is_file()
    for length, entry in curves.items():
        key = "test/loss" if length == "16" else f"test/loss@{length}"
        mean = sum(entry["curve"]) / len(entry["curve"])  # every position has as many windows
        assert mean == pytest.approx(recorded["final"][key], rel=1e-5), length
        assert entry["windows"] == 1024 // int(length)
    val = curves["16"]["val"]  # the criterion on the validation windows, where it gates
    assert val["windows"] == 1024 // 16 and val["gain"] != curves["16"]["gain"]
    table = (root / "eval" / "context_use.md").read_text()
    assert f"| rope |  | 0 | {val['gain']:.4f} [{val['low']:.4f}, " in table
    assert not list((root / "eval").glob("*-ft*"))  # no fine-tune ran
    (path,) = records.glob("*.json")
    record = json.loads(path.read_text())
    assert path.name == "rope_s0.json" and record["run_id"] == recorded["run_id"]
    assert record["final"]["test/loss"] == recorded["final"]["test/loss"]
    saved = {k: v for k, v in curves["16"].items() if k != "curve"}
    assert record["evaluation"] == {"context_length": 16, "context": saved}
    assert str(tmp_path) not in path.read_text()  # no machine paths in a committed record
