"""research-eval's view of a finished run: its saved config, the evaluation's overrides, checked
by the same declarations as a research-train command line, before torch loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from research.config.errors import ConfigError
from research.config.paths import config_dir
from research.config.registry import MOVED_TARGETS
from research.config.saved_run import saved_run_config


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run dir as Hydra leaves it, saved before the LightningModules moved to tasks/."""
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["experiment=transformer_recall"])
    cfg.model._target_ = "research.modules.classification.ClassificationModule"
    cfg.data._target_ = "research.data.synthetic.AssociativeRecallDataModule"
    (tmp_path / ".hydra").mkdir()
    OmegaConf.save(cfg, tmp_path / ".hydra" / "config.yaml")
    return tmp_path


def test_a_run_saved_under_old_target_names_loads_with_the_current_ones(run_dir: Path):
    config = saved_run_config(run_dir)
    assert (
        config["model"]["_target_"]
        == MOVED_TARGETS["research.modules.classification.ClassificationModule"]
    )
    assert config["data"]["_target_"] == "research.data.recall.AssociativeRecallDataModule"


def test_overrides_change_the_saved_config(run_dir: Path):
    config = saved_run_config(run_dir, ["data.eval_num_pairs=[32]", "model.net.position=learned"])
    assert config["data"]["eval_num_pairs"] == [32]
    assert config["model"]["net"]["position"] == "learned"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["model.net.dropout=2"], "model.net.dropout=2.0 is out of range"),
        (["model.net.bogus=1"], "model.net.bogus is not an option of"),
        (["model.net.rope_scaling.rope_type=magic"], "rope_scaling.rope_type='magic' is not valid"),
        (["model.net.d_model=[1"], "overrides="),
    ],
)
def test_bad_eval_overrides_fail_in_one_line_as_research_train_would(run_dir, overrides, expected):
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(")) as err:
        saved_run_config(run_dir, overrides)
    assert "\n" not in str(err.value)


def test_a_folder_that_is_not_a_run_is_named(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"is not a run directory \(no .hydra/config.yaml\)"):
        saved_run_config(tmp_path)
