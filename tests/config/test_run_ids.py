"""Existing runs keep their identity across upgrades: the skip-done logic of sweeps and ablations
finds completed runs by their run id (config hash + seed), so a refactor of the YAML files or the
declarations must not change what any experiment or ablation variant hashes to.

`run_ids.json` holds the config hash of every experiment and ablation variant, computed before
the YAML files stopped repeating declared defaults (their values moved into the declarations);
only the variants of `model=transformer_cls` were recorded anew, when its `rope_scaling` block
left HF's legacy key names (`type`, `original_max_len`) for the current ones, and `xiong2020`'s
when its learning rate became the one its sweep chose (its earlier variants are kept, with the
old rate given explicitly, under `xiong2020 (lr 1e-3, retired)`: they hash as before), and
`colbert_stdlib`'s when its rate became the 1e-4 chosen on validation (the colbert_recipe,
colbert_budget and colbert_embedding_size variants give the old 5e-5 explicitly), and
`context_extension`'s when its training budget became the 8 epochs its budget study chose
(the 4-epoch variants are kept under "(4 epochs, retired)"). Two runs that set the float32
matmul precision as `trainer.float32_matmul_precision` are recorded with its hash from then, and
set it as the top-level `float32_matmul_precision` it moved to ("before it moved"). Paths
that depend on the machine (the packaged MiniLM, the data folder) are replaced by placeholders
first, so the hashes are the same on every checkout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from research.config.paths import config_dir
from research.config.validate import validate
from research.tracking.identity import config_hash
from research.utils.backbones import default_backbone
from research.utils.engine_versions import version_base

GOLDEN = json.loads((Path(__file__).parent / "run_ids.json").read_text())


def _portable(node: Any, data_dir: str, backbone: str) -> Any:
    if isinstance(node, dict):
        return {k: _portable(v, data_dir, backbone) for k, v in node.items()}
    if isinstance(node, list):
        return [_portable(v, data_dir, backbone) for v in node]
    if node == backbone:
        return "<backbone>"
    if isinstance(node, str) and node.startswith(data_dir):
        return "<data_dir>" + node[len(data_dir) :]
    return node


def portable_hash(config: dict[str, Any]) -> str:
    """The config hash with machine-dependent paths replaced by placeholders."""
    data_dir = str(config["paths"]["data_dir"])
    return config_hash(_portable(config, data_dir, default_backbone()))


@pytest.mark.slow  # composes every experiment and ablation variant: about 10 s
def test_every_experiment_and_variant_keeps_its_run_id():
    changed = []
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        for name, expected in sorted(GOLDEN.items()):
            config = validate(compose(config_name="train", overrides=expected["overrides"]))
            if portable_hash(config) != expected["config_hash"]:
                changed.append(name)
    assert not changed, (
        f"{', '.join(changed)} hash differently from before, so their runs would no longer be "
        "found as done; a changed default or a YAML value that moved must keep the resolved "
        "config the same"
    )


def test_a_run_on_slurm_is_the_same_experiment_as_here():
    """Where a run executes is not what it computes: the SLURM launcher's cluster plugin and the
    conversion Hydra hands it to Lightning with leave the run id as it is."""
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        here = validate(compose(config_name="train", overrides=["seed=1"]))
        slurm = validate(
            compose(config_name="train", overrides=["seed=1", "launcher=submitit_slurm"])
        )
    assert slurm["trainer"]["_convert_"] == "all" and slurm["trainer"]["plugins"]
    assert portable_hash(slurm) == portable_hash(here)
