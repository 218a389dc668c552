"""One declaration per parameter: the declaration the CLI checks before torch loads is the one
every constructor takes, and every target any shipped config names has one.

Nothing here lists components: the targets are read from the YAML files, and which data each
model can be composed with is worked out from what the model's YAML reads (`${data.<key>}`) and
what each data option provides (its YAML and its declaration), and from the kinds of batch their
declarations take and give. So a new model, dataset or loss is
checked as soon as its module, declaration and YAML exist, or the failure names the file to fix.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from research.config.errors import ConfigError
from research.config.pairing import fits, gives_of, option_bodies, option_keys
from research.config.paths import config_dir, group_options
from research.config.registry import LIBRARY_DECLARATIONS, declaration
from research.config.schema import plain, walk_targets
from research.config.validate import resolve, validate
from research.utils.engine_versions import version_base

# Groups whose options only change Hydra's own node (sweeper, launcher) or hold ablation files;
# model, data and loss options are composed together.
NOT_ON_THE_RUN = {"hydra", "paths", "ablation", "experiment", "model", "data", "loss"}
_READS_DATA = re.compile(r"\$\{data\.(\w+)")


def _yaml_targets() -> set[str]:
    """Every `_target_` the run configs name (Hydra's own nodes aside)."""
    found: set[str] = set()
    for path in config_dir().rglob("*.yaml"):
        if path.relative_to(config_dir()).parts[0] == "hydra":
            continue
        body = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        if isinstance(body, dict):
            body.pop("hydra", None)
            found |= {str(node["_target_"]) for _, node in walk_targets(body)}
    return found


def _text_with_extended(path: Path) -> str:
    """A group file's text and that of the files its defaults list pulls in."""
    text = path.read_text()
    for entry in OmegaConf.load(path).get("defaults") or []:
        if isinstance(entry, str) and entry != "_self_":
            included = path.parent / f"{entry.partition('@')[0]}.yaml"
            text += _text_with_extended(included) if included.is_file() else ""
    return text


def model_reads(model: str) -> set[str]:
    """The data keys a model option interpolates (`${data.num_classes}`, ...)."""
    return set(_READS_DATA.findall(_text_with_extended(config_dir() / "model" / f"{model}.yaml")))


def model_data_pairs() -> dict[str, list[str]]:
    """model option -> the data options that provide every key it reads, and whose kind of
    batch it takes where both declare one."""
    datas = option_bodies("data")
    return {
        model: [
            name
            for name, data in datas.items()
            if model_reads(model) <= option_keys(data) and fits(body, gives_of(data))
        ]
        for model, body in option_bodies("model").items()
    }


TARGETS = sorted(_yaml_targets())
# A subclass of a library component with the library's parameters (research's WandbLogger) keeps
# the library's declaration, and is checked as the library's targets are.
OURS = [
    t
    for t in TARGETS
    if t.startswith(("research.", "hydra_plugins."))
    and getattr(declaration(t), "__module__", None) not in LIBRARY_DECLARATIONS
]
THEIRS = [t for t in TARGETS if t not in OURS]


def _import(target: str) -> Any:
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_model_and_data_option_pairs_with_another():
    pairs = model_data_pairs()
    for model, datas in pairs.items():
        assert datas, (
            f"conf/model/{model}.yaml reads data.{{{', '.join(sorted(model_reads(model)))}}} but "
            "no conf/data/*.yaml provides all of them; add the missing keys to a data option's "
            "declaration (or its YAML)"
        )
    for data in group_options("data"):
        assert any(data in datas for datas in pairs.values()), (
            f"conf/data/{data}.yaml provides no model option with what it reads; declare the "
            "keys a model interpolates (e.g. num_classes) in its data declaration"
        )


def _loss_overrides(loss: str) -> list[str]:
    """`loss=<loss>`, with the teacher scores distillation needs (the file is read only when the
    data is set up)."""
    return [f"loss={loss}", *(["data.distillation_file=teacher.jsonl"] * (loss == "distillation"))]


def _command_lines() -> list[list[str]]:
    """The default config, every model and data option (each with a partner it fits and a loss
    for that data), every loss option (with data it fits), and every option of the other run
    groups on the default config (test_run_ids composes every experiment)."""
    pairs = model_data_pairs()
    datas, losses = option_bodies("data"), option_bodies("loss")
    combos = [(m, ds[0]) for m, ds in pairs.items()]
    combos += [(next(m for m, ds in pairs.items() if d in ds), d) for d in datas]
    lines: list[list[str]] = [[]]
    for model, data in combos:
        gives = gives_of(datas[data])
        loss = next(name for name, body in losses.items() if fits(body, gives))
        lines.append([f"model={model}", f"data={data}", *_loss_overrides(loss)])
    for loss, body in losses.items():
        model, data = next((m, d) for m, d in combos if fits(body, gives_of(datas[d])))
        lines.append([f"model={model}", f"data={data}", *_loss_overrides(loss)])
    for folder in sorted(p for p in config_dir().iterdir() if p.is_dir()):
        if folder.name not in NOT_ON_THE_RUN:
            lines += [[f"{folder.name}={option}"] for option in group_options(folder.name)]
    return lines


@pytest.mark.slow  # composes every option of every group: about 14 s
def test_every_option_composes_and_validates_or_names_what_it_needs():
    """A data option that needs the user's input (BEIR's folder) fails in one line saying so."""
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        for overrides in _command_lines():
            cfg = compose(config_name="train", overrides=overrides)
            try:
                validate(cfg)
            except ConfigError as err:
                assert "\n" not in str(err) and str(err).startswith("data."), (overrides, err)
                resolve(cfg)


@pytest.mark.parametrize("target", TARGETS)
def test_every_target_has_a_declaration(target: str):
    assert declaration(target) is not None, (
        f"{target} is named by a config but declared nowhere: add a Schema naming it to the "
        "configs.py of its package"
    )


@pytest.mark.parametrize("target", OURS)
def test_our_components_take_their_declaration(target: str):
    """The constructor's parameters are the declaration: `config` or its fields as keywords."""
    schema = declaration(target)
    component = _import(target)
    parameters = inspect.signature(component).parameters
    assert "config" in parameters, f"{target} does not take its {declaration.__name__}"
    assert any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    assert schema.__name__ in str(parameters["config"].annotation)
    own = {
        name for name, p in parameters.items() if p.kind is not p.VAR_KEYWORD and name != "config"
    }
    fields = {f.name for f in dataclasses.fields(schema)}
    assert not own & fields, f"{target} repeats declared parameters {sorted(own & fields)}"


@pytest.mark.parametrize("target", THEIRS)
def test_declarations_of_library_targets_match_their_signatures(target: str):
    """For what we configure but do not own, names and defaults agree with the library's."""
    parameters = inspect.signature(_import(target)).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    schema = declaration(target)
    for field in dataclasses.fields(schema):
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
        == declaration("research.losses.contrastive.Contrastive")().temperature
    )


def test_declarations_load_without_torch():
    code = (
        "import sys; from research.config.registry import declaration; "
        f"[declaration(t) for t in {TARGETS!r}]; assert 'torch' not in sys.modules, 'torch'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_composing_a_colbert_config_leaves_the_environment_alone(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        resolve(compose(config_name="train", overrides=["experiment=colbert_stdlib"]))
    import os

    assert "HF_HUB_OFFLINE" not in os.environ


def test_the_encoder_builds_every_activation_its_declaration_allows():
    from research.models.configs import ACTIVATIONS
    from research.models.transformer.block import ACTIVATION_MODULES

    assert set(ACTIVATION_MODULES) == set(ACTIVATIONS)
