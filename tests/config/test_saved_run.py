"""research-eval's view of a finished run: its saved config, the evaluation's overrides, checked
by the same declarations as a research-train command line, before torch loads."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from research.config.errors import ConfigError
from research.config.paths import config_dir
from research.config.registry import MOVED_TARGETS
from research.config.saved_run import saved_run_config
from research.utils.engine_versions import version_base


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run dir as Hydra leaves it, saved before the LightningModules moved to tasks/."""
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
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


def test_a_node_takes_a_mapping_or_null_but_not_another_options_name(run_dir: Path):
    """The docs' way to evaluate a run under a RoPE scaling sets the whole node."""
    scaling = "model.net.rope_scaling={rope_type: dynamic, factor: 8}"
    assert saved_run_config(run_dir, [scaling])["model"]["net"]["rope_scaling"]["factor"] == 8
    assert (
        saved_run_config(run_dir, ["model.net.rope_scaling=null"])["model"]["net"]["rope_scaling"]
        is None
    )


def test_an_override_below_a_null_node_makes_it(run_dir: Path):
    _saved(run_dir, lambda c: c["model"]["net"].update(rope_scaling=None))
    overrides = ["model.net.rope_scaling.rope_type=linear", "model.net.rope_scaling.factor=2.0"]
    scaling = saved_run_config(run_dir, overrides)["model"]["net"]["rope_scaling"]
    assert scaling["rope_type"] == "linear" and scaling["factor"] == 2.0


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["model.net.dropout=2"], "model.net.dropout=2.0 is out of range"),
        # OmegaConf would add any key: a typo would evaluate the run unchanged.
        (["model.net.bogus=1"], "model.net.bogus=1: the run's config has no model.net.bogus; "),
        (["+model.net.bogus=1"], "model.net.bogus is not an option of"),
        (["nope=1"], "nope=1: the run's config has no nope; it has: callbacks, "),
        (["data.eval_num_pair=[8]"], "no data.eval_num_pair; did you mean data.eval_num_pairs?"),
        # The saved config holds the option the run was trained with, no other's defaults.
        (["data=digits"], "data=digits: data is a node of the run's config, not a value; "),
        (["data"], "'data' is not key=value"),
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


def _saved(run_dir: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    """`run_dir` with its saved config changed by `change` (on plain containers)."""
    saved = run_dir / ".hydra" / "config.yaml"
    config = OmegaConf.to_container(OmegaConf.load(saved))
    change(config)
    OmegaConf.save(OmegaConf.create(config), saved)
    return run_dir


# The payload: unpickling a file from a copied run dir runs any code in it.
PAYLOAD = {"_target_": "torch.load", "f": "payload.pt", "weights_only": False}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (lambda c: c.update(loss=PAYLOAD), "loss._target_='torch.load'"),
        (lambda c: c.update(loss={**PAYLOAD, "_partial_": True}), "loss._target_='torch.load'"),
        (lambda c: c["optimizer"].update(_args_=[PAYLOAD]), "optimizer._args_[0]._target_="),
        (lambda c: c["trainer"].update(plugins=[PAYLOAD]), "trainer.plugins[0]._target_="),
        (lambda c: c["model"]["net"].update(_target_=["os.system"]), "model.net._target_=['os"),
        (lambda c: c.update(data={**c["data"], "_target_": "research.modules.Gone"}), "data._t"),
        # An escaped interpolation survives the first resolution; instantiate resolves it again.
        (lambda c: c.update(tags=["\\${oc.create:{_target_: os.system}}"]), "tags[0]='${oc."),
    ],
)
def test_a_saved_run_builds_only_declared_components_unless_trusted(run_dir, change, key):
    _saved(run_dir, change)
    with pytest.raises(ConfigError) as err:
        saved_run_config(run_dir)
    message = str(err.value)
    assert "\n" not in message and key in message
    assert message.endswith("pass trust_run_dir=true if you trust this run dir")
    assert saved_run_config(run_dir, trust=True)["seed"] == 0


def test_the_opt_in_the_refusal_names_is_the_callers(run_dir: Path):
    _saved(run_dir, lambda c: c.update(loss=PAYLOAD))
    with pytest.raises(ConfigError, match="pass --trust-run-dir if you trust"):
        saved_run_config(run_dir, opt_in="--trust-run-dir")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model: [unclosed\n", "YAML syntax error"),
        ("- a\n- b\n", "it holds a list, not a run's config"),
        ("42\n", "Invalid loaded object type: int"),
        ("", "(no data, model, loss, optimizer, trainer node)"),
        ("seed: 3\nmodel:\n  _target_: x\n", "(no data, loss, optimizer, trainer node)"),
    ],
)
def test_a_damaged_saved_config_is_one_line(run_dir: Path, text: str, expected: str):
    (run_dir / ".hydra" / "config.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        saved_run_config(run_dir)
    message = str(err.value)
    assert "\n" not in message and expected in message
    assert message.startswith(f"run_dir={run_dir.resolve()}: .hydra/config.yaml is damaged")


@pytest.mark.slow
def test_a_saved_config_cut_anywhere_is_refused_or_loads(run_dir: Path):
    """A truncated file (full disk, interrupted copy): at every cut, one line or a config."""
    saved = run_dir / ".hydra" / "config.yaml"
    text = saved.read_text()
    refused = 0
    for cut in range(0, len(text), max(1, len(text) // 60)):
        saved.write_text(text[:cut])
        try:
            config = saved_run_config(run_dir)
        except ConfigError as err:
            assert "\n" not in str(err)
            refused += 1
        else:
            assert all(config.get(k) for k in ("data", "model", "loss", "optimizer", "trainer"))
    assert refused > 0


def test_a_multirun_folder_names_its_job_run_dirs(run_dir: Path, tmp_path: Path):
    sweep = tmp_path / "multirun"
    for job in ("10_seed-10", "2_seed-2", "0_seed-0", "1_seed-1"):
        (sweep / job / ".hydra").mkdir(parents=True)
        shutil.copy(run_dir / ".hydra" / "config.yaml", sweep / job / ".hydra" / "config.yaml")
    with pytest.raises(ConfigError) as err:
        saved_run_config(sweep)
    assert str(err.value) == (
        f"run_dir={sweep} is a multirun folder holding 4 job run dirs (0_seed-0, 1_seed-1, "
        f"2_seed-2 and 1 more), not a run directory; pass one job's run dir instead, e.g. "
        f"{sweep / '0_seed-0'}"
    )
