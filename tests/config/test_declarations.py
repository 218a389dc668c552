"""One declaration per parameter: the declaration the CLI checks before torch loads is the one
every constructor takes, and every target any shipped config names has one.

Walks every option of every config group (each experiment, a model/data pairing for every model
and data option, and each option of the other groups on the default config), so a new YAML file,
group or component without a declaration fails here rather than going unchecked.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from research.config.compose import config_dir, group_options
from research.config.schema import SCHEMAS, plain, walk_targets
from research.config.validate import resolve

# Which data each model option is composed with (a model reads its sizes from the data).
MODEL_DATA = {
    "cnn": ["digits", "mnist", "fashion_mnist", "cifar10"],
    "transformer_cls": ["synthetic_recall", "synthetic_listops", "stdlib_modules", "hf_text"],
    "transformer_mlm": ["stdlib_text"],
    "transformer_lm": ["stdlib_code", "hf_lm"],
    "colbert": ["beir", "stdlib_codesearch"],
}
# Overrides that a data option needs to resolve (a BEIR folder is the user's to name).
DATA_EXTRA = {"beir": ["data.path=/nowhere", "data.name=null"]}
# Groups whose options only change Hydra's own node (sweeper, launcher) or hold ablation files.
NOT_ON_THE_RUN = {"hydra", "paths", "ablation", "experiment", "model", "data"}


def _command_lines() -> list[list[str]]:
    lines = [[]]
    lines += [[f"experiment={name}"] for name in group_options("experiment")]
    for model, datas in MODEL_DATA.items():
        lines += [[f"model={model}", f"data={data}", *DATA_EXTRA.get(data, [])] for data in datas]
    for folder in sorted(p for p in config_dir().iterdir() if p.is_dir()):
        if folder.name not in NOT_ON_THE_RUN:
            lines += [[f"{folder.name}={option}"] for option in group_options(folder.name)]
    return lines


def _targets() -> dict[str, list[dict[str, Any]]]:
    """Every `_target_` of every composed config, with the nodes that name it."""
    found: dict[str, list[dict[str, Any]]] = {}
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        for overrides in _command_lines():
            resolved = resolve(compose(config_name="train", overrides=overrides))
            for _, node in walk_targets(resolved):
                found.setdefault(str(node["_target_"]), []).append(node)
    return found


TARGETS = _targets()
OURS = sorted(t for t in TARGETS if t.startswith("research."))
THEIRS = sorted(t for t in TARGETS if not t.startswith("research."))


def _import(target: str) -> Any:
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_group_option_was_composed():
    models_and_data = set(MODEL_DATA) | {d for ds in MODEL_DATA.values() for d in ds}
    assert set(group_options("model")) | set(group_options("data")) == models_and_data
    assert len(TARGETS) >= 30


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_target_has_a_declaration(target: str):
    assert target in SCHEMAS, f"{target} is named by a config but declared nowhere"


@pytest.mark.parametrize("target", OURS)
def test_our_components_take_their_declaration(target: str):
    """The constructor's parameters are the declaration: `config` or its fields as keywords."""
    declaration = SCHEMAS[target]
    component = _import(target)
    parameters = inspect.signature(component).parameters
    assert "config" in parameters, f"{target} does not take its {declaration.__name__}"
    assert any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    assert declaration.__name__ in str(parameters["config"].annotation)
    own = {
        name for name, p in parameters.items() if p.kind is not p.VAR_KEYWORD and name != "config"
    }
    fields = {f.name for f in dataclasses.fields(declaration)}
    assert not own & fields, f"{target} repeats declared parameters {sorted(own & fields)}"


@pytest.mark.parametrize("target", THEIRS)
def test_declarations_of_library_targets_match_their_signatures(target: str):
    """For what we configure but do not own, names and defaults agree with the library's."""
    parameters = inspect.signature(_import(target)).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    for field in dataclasses.fields(SCHEMAS[target]):
        if field.name not in parameters:
            assert takes_any, f"{target} has no parameter {field.name}"
            continue
        default = parameters[field.name].default
        if default is inspect.Parameter.empty or field.default is dataclasses.MISSING:
            continue
        assert plain(default) == field.default, (
            f"{target}.{field.name}: declared default {field.default!r}, library's {default!r}"
        )


def test_a_component_built_from_keywords_holds_the_checked_declaration():
    from research.losses.contrastive import Contrastive
    from research.models.cnn import CNN
    from research.models.configs import CNNConfig

    net = CNN(channels=[4], kernel_sizes=[5])
    assert net.config == CNNConfig(channels=[4], kernel_sizes=[5])
    assert CNN(net.config).config is net.config
    # Defaults come from the declaration: nothing else holds one.
    assert (
        Contrastive().config.temperature
        == SCHEMAS["research.losses.contrastive.Contrastive"]().temperature
    )


def test_declarations_load_without_torch():
    code = "import sys, research.config.schemas; assert 'torch' not in sys.modules, 'torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_composing_a_colbert_config_leaves_the_environment_alone(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        resolve(compose(config_name="train", overrides=["experiment=colbert_stdlib"]))
    import os

    assert "HF_HUB_OFFLINE" not in os.environ


def test_the_encoder_builds_every_activation_its_declaration_allows():
    from research.models.configs import ACTIVATIONS
    from research.models.transformer.block import ACTIVATION_MODULES

    assert set(ACTIVATION_MODULES) == set(ACTIVATIONS)
