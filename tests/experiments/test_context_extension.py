"""The context-extension study's evaluation step: the overrides it passes to research-eval and
research-train mean the same scaling to both, and its table reads the right metric per length."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from research.models.configs import rope_parameters

SCRIPT = Path(__file__).parents[2] / "experiments" / "context_extension" / "evaluate.py"
spec = importlib.util.spec_from_file_location("context_extension_evaluate", SCRIPT)
evaluate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(evaluate)

EXPECTED = {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 128}


def test_scaling_override_means_the_same_to_eval_and_train():
    (override,) = evaluate.scaling_overrides("yarn", 4, 128)
    saved = OmegaConf.create({"model": {"net": {"rope_scaling": None}}})
    saved.merge_with_dotlist([override])  # how research-eval applies its overrides
    assert OmegaConf.to_container(saved.model.net.rope_scaling) == EXPECTED
    (parsed,) = OverridesParser.create().parse_overrides([override])  # research-train's grammar
    assert parsed.value() == EXPECTED
    assert rope_parameters(EXPECTED)["rope_type"] == "yarn"


def test_metric_names_and_table():
    metrics = {"test/ppl": 10.0, "test/ppl@256": 12.0, "test/ppl@128": 11.0}
    assert evaluate.ppl_at(metrics, 128, 128) == 10.0
    assert evaluate.ppl_at(metrics, 128, 256) == 12.0
    assert evaluate.ppl_at(metrics, 512, 128) == 11.0  # a run fine-tuned at 512
    text = evaluate.table({"rope, as trained": {128: [10.0, 12.0], 256: [20.0, 22.0]}})
    assert "| rope, as trained | 2 | 11.00 ± 1.41 | 21.00 ± 1.41 |" in text
    assert text.splitlines()[0] == "| method | n | ppl@128 | ppl@256 |"
