"""Hydra 1.4's execution allow-list: a run calls the targets its declarations name (and the
classes a declared function returns), on Hydra 1.4 without the warning that 1.5 will make an
error; a target nothing declares is refused there. Hydra 1.3 has no allow-list."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from hydra.errors import InstantiationException
from omegaconf import OmegaConf

from research.api import compose, train
from research.config.errors import ConfigError
from research.config.instantiate import allowed_targets, instantiate_plain, returned_type
from research.run.plan import plan_config
from research.utils.engine_versions import hydra_14
from tests.helpers.cli import FAST, run_cli


def test_a_declared_function_adds_the_class_it_returns():
    assert returned_type("research.losses.cross_entropy.cross_entropy") == (
        "torch.nn.modules.loss.CrossEntropyLoss"
    )
    assert returned_type("research.models.cnn.CNN") is None  # a class: Hydra checks its name


def test_the_default_runs_targets_are_allowed_and_nothing_else():
    cfg = compose("train", ["logger=csv"])
    allowed = allowed_targets(cfg)
    for target in (
        "lightning.pytorch.Trainer",
        "research.data.digits.DigitsDataModule",
        "research.models.cnn.CNN",
        "research.losses.cross_entropy.cross_entropy",
        "torch.nn.modules.loss.CrossEntropyLoss",
        "torch.optim.Adam",
    ):
        assert target in allowed, target
    assert not any(t.startswith(("os.", "builtins.", "subprocess.")) for t in allowed)


@pytest.mark.parametrize("node", ["loss", "optimizer", "model.net", "data"])
def test_a_composed_node_instantiates_without_hydras_legacy_warning(node: str):
    cfg = compose("train")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Hydra 1.4 warns for a call outside an allow-list
        built = instantiate_plain(OmegaConf.select(cfg, node))
    assert built is not None


def test_an_undeclared_target_is_refused_where_hydra_has_an_allow_list():
    node = OmegaConf.create({"_target_": "collections.OrderedDict", "a": 1})
    if hydra_14():
        with pytest.raises(InstantiationException, match="collections.OrderedDict"):
            instantiate_plain(node)
    else:
        assert instantiate_plain(node) == {"a": 1}


def test_a_command_naming_an_undeclared_target_is_refused_before_the_run_on_hydra_14(capsys):
    overrides = ["+callbacks.mine._target_=collections.OrderedDict"]
    if hydra_14():
        with pytest.raises(ConfigError, match=r"callbacks.mine._target_=.*has no declaration, "):
            compose("train", overrides)
    else:
        compose("train", overrides)
        assert "callbacks.mine._target_=collections.OrderedDict has no declaration, so" in (
            capsys.readouterr().err
        )


def test_train_refuses_an_undeclared_target_edited_into_a_composed_config(tmp_path: Path, capsys):
    """The Python API checks an edited config as research-train checks a command line: on
    Hydra 1.4 refused before anything is written, on 1.3 with the same warning."""
    cfg = compose("train", [*FAST, f"paths.root={tmp_path}"])
    cfg.loss._target_ = "collections.OrderedDict"
    if hydra_14():
        with pytest.raises(ConfigError, match=r"loss._target_=.*has no declaration, and Hydra"):
            train(cfg)
        assert not (tmp_path / "logs").exists()
    else:
        plan, _ = plan_config("research-train", cfg)
        plan.release()
        said = capsys.readouterr().err
        assert re.search(r"loss._target_=\S*OrderedDict\S* has no declaration, so", said)


@pytest.mark.slow
def test_a_sweep_and_a_search_run_with_no_allow_list_warning(tmp_path: Path):
    """The commands users run most, end to end: on Hydra 1.4 neither a job's components nor
    Hydra's own callback and logging classes run outside the allow-list."""
    sweep = run_cli("research-train", "-m", *FAST, "seed=0,1", cwd=tmp_path)
    search = run_cli(
        "research-train",
        "-m",
        *FAST,
        "hparams_search=optuna",
        "hydra.sweeper.n_trials=2",
        "hydra.sweeper.storage=null",
        cwd=tmp_path,
    )
    for done in (sweep, search):
        assert done.returncode == 0, done.stderr
        assert "whitelist" not in done.stderr + done.stdout
    assert "sweep: 2/2 jobs completed" in sweep.stdout
    assert "best trial" in search.stdout


@pytest.mark.slow
def test_the_python_api_runs_with_no_allow_list_warning(tmp_path: Path):
    from research.api import train

    cfg = compose("train", [*FAST, "logger=none", f"paths.log_dir={tmp_path}"])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run = train(cfg)
    assert run.status == "completed"
    assert not [w for w in seen if "whitelist" in str(w.message)]
