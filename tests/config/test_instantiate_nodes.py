"""Every node of a composed config that names a `_target_` builds with Hydra's own `instantiate`,
as the lightning-hydra-template habit has it (`hydra.utils.instantiate(cfg.trainer)`): a key the
run applies itself does not sit under a `_target_` that cannot take it.

The configs come from `research.compose` (Hydra's compose API, plus the checks); a finished run's
saved config, as `research-eval` reads it, instantiates the same way. The model takes its loss,
optimizer and scheduler as arguments (they are groups of their own), so it gets them from their
own nodes, as the run does.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any

import pytest
from hydra.utils import get_object, instantiate
from omegaconf import DictConfig, OmegaConf

import research
from research.config.paths import config_dir
from research.config.saved_run import SAVED_CONFIG, saved_run_config
from research.config.schema import walk_targets

# Top-level nodes whose entries are nodes of their own (a run builds each entry).
COLLECTIONS = ("callbacks", "logger")
# The model's constructor arguments that are groups of their own.
MODEL_PARTS = ("loss", "optimizer", "scheduler")

# Each option of trainer/, logger/ and callbacks/, each model family (with a dataset it fits), a
# partial scheduler, debug and launcher configs that change the trainer node, and a search (its
# pruning callback).
CASES = {
    "defaults": [],
    "trainer=cpu": ["trainer=cpu"],
    "trainer=ddp_sim": ["trainer=ddp_sim"],
    "trainer=gpu": ["trainer=gpu"],
    "trainer=ddp": ["trainer=ddp"],
    "trainer=fsdp": ["trainer=fsdp"],
    "logger=csv callbacks=none": ["logger=csv", "callbacks=none"],
    "logger=many callbacks=grad_norm": ["logger=many", "callbacks=grad_norm"],
    "logger=none callbacks=throughput": ["logger=none", "callbacks=throughput"],
    "transformer_cls": ["experiment=transformer_listops"],
    "transformer_mlm": ["experiment=transformer_mlm_stdlib"],
    "transformer_lm": ["experiment=context_extension"],
    "colbert": ["experiment=colbert_stdlib"],
    "dense": ["model=dense", "data=stdlib_codesearch", "loss=contrastive"],
    "cnn on cifar10, sgd, inverse_sqrt": [
        "data=cifar10",
        "optimizer=sgd",
        "scheduler=inverse_sqrt",
    ],
    "launcher=submitit_slurm debug=profiler": ["launcher=submitit_slurm", "debug=profiler"],
    "hparams_search=optuna float32_matmul_precision=high": [
        "hparams_search=optuna",
        "float32_matmul_precision=high",
    ],
}
# The second retriever: loading the packaged MiniLM backbone again is most of a second.
SLOW = {"dense"}


# Groups every option of which some case above chooses.
EVERY_OPTION = ("trainer", "logger", "callbacks", "model")


def _choices(overrides: list[str]) -> dict[str, str]:
    """The option of each group that `overrides` choose (train.yaml's defaults, an experiment's
    `override /group: option`, then the command line's `group=option`), read from the files."""
    entry = OmegaConf.load(config_dir() / "train.yaml")
    chosen = {
        k: v for item in entry.defaults if isinstance(item, DictConfig) for k, v in item.items()
    }
    for override in overrides:
        group, _, option = override.partition("=")
        if group == "experiment":
            experiment = OmegaConf.load(config_dir() / "experiment" / f"{option}.yaml")
            for item in experiment.defaults:
                for key, value in item.items():
                    chosen[key.removeprefix("override /")] = value
        elif "." not in group:
            chosen[group] = option
    return chosen


def test_the_cases_choose_every_option_of_the_groups_they_cover():
    for group in EVERY_OPTION:
        options = {p.stem for p in (config_dir() / group).glob("*.yaml")}
        chosen = {_choices(overrides).get(group) for overrides in CASES.values()}
        assert options <= chosen, f"no case chooses {group}={sorted(options - chosen)}"


def _has_gpus(trainer: DictConfig) -> bool:
    import torch

    wanted = trainer.get("devices")
    count = torch.cuda.device_count()
    return count > 0 and (not isinstance(wanted, int) or wanted <= count)


def _check_trainer(node: DictConfig) -> Any:
    """`instantiate(node)`. A trainer for GPUs on a machine without them is checked in the two
    ways that remain: Lightning's Trainer takes every key of the node (the check that failed
    for `float32_matmul_precision`), and it builds from the node with the GPU settings put to
    the CPU (every other value is valid)."""
    import lightning.pytorch as pl

    if node.accelerator not in ("gpu", "cuda") or _has_gpus(node):
        return instantiate(node)
    keys = OmegaConf.to_container(node, resolve=True)
    assert isinstance(keys, dict)
    keys = {k: v for k, v in keys.items() if not str(k).startswith("_")}
    inspect.signature(pl.Trainer).bind(**keys)
    return instantiate(node, accelerator="cpu", devices=1, strategy="auto")


def _built(target: str, obj: Any) -> None:
    """`obj` is what `target` builds: an object, not a config (a partial for `_partial_`)."""
    assert obj is not None and not isinstance(obj, DictConfig), target
    if isinstance(obj, functools.partial):
        inspect.signature(obj.func).bind_partial(*obj.args, **obj.keywords)
        return
    named = get_object(target)
    if isinstance(named, type):  # a function target (a factory) returns what it makes
        assert isinstance(obj, named), (target, type(obj))


def instantiate_every_node(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    """{path: object} for every node of `cfg` (Hydra's own node aside) with a `_target_`, each
    built by `hydra.utils.instantiate`; sub-nodes are built by their node's instantiate."""
    cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
    nodes: dict[str, DictConfig] = {}
    for key in cfg:
        node = cfg[key]
        if key == "hydra" or not isinstance(node, DictConfig):
            continue
        if node.get("_target_"):
            nodes[str(key)] = node
        elif key in COLLECTIONS:
            for name in node:
                if isinstance(node[name], DictConfig) and node[name].get("_target_"):
                    nodes[f"{key}.{name}"] = node[name]
    plain = {
        str(key): OmegaConf.to_container(cfg[key], resolve=True)
        for key in cfg
        if key != "hydra" and isinstance(cfg[key], DictConfig)
    }
    uncovered = [
        at
        for at, _ in walk_targets(plain)
        if not any(at == path or at.startswith(f"{path}.") for path in nodes)
        and at.partition(".")[0] not in MODEL_PARTS  # e.g. scheduler=none: `_target_: null`
    ]
    assert not uncovered, f"nodes with a _target_ this test does not build: {uncovered}"
    built: dict[str, Any] = {}
    for path in [*MODEL_PARTS, *(p for p in nodes if p not in MODEL_PARTS)]:
        if path not in nodes:
            continue
        node = nodes[path]
        if path == "trainer":
            built[path] = _check_trainer(node)
        elif path == "model":
            parts = {part: built.get(part) for part in MODEL_PARTS}
            built[path] = instantiate(node, **parts)
            built["optimizer (called)"] = built["optimizer"](built[path].parameters())
        else:
            built[path] = instantiate(node)
        _built(str(node._target_), built[path])
    return built


def _case(name: str) -> Any:
    marks = [pytest.mark.slow] if name in SLOW else []
    return pytest.param(CASES[name], id=name, marks=marks)


@pytest.mark.parametrize("overrides", [_case(name) for name in CASES])
def test_every_node_of_a_composed_config_instantiates(overrides: list[str], monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    cfg = research.compose("train", overrides)
    built = instantiate_every_node(cfg)
    import lightning.pytorch as pl

    assert isinstance(built["trainer"], pl.Trainer)
    assert isinstance(built["model"], pl.LightningModule)
    assert isinstance(built["data"], pl.LightningDataModule)
    for path, obj in built.items():
        if path.startswith("callbacks."):
            assert isinstance(obj, pl.Callback), path
        if path.startswith("logger."):
            assert isinstance(obj, pl.loggers.Logger), path


def _saved_run(folder: Path, overrides: list[str], edit: Any = None) -> Path:
    """A run dir as a finished run leaves it: its config (without Hydra's node) in .hydra/, and a
    best checkpoint (an empty one: nothing here loads it)."""
    import torch

    cfg = research.compose("train", overrides)
    with_hydra = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(with_hydra, dict)
    with_hydra.pop("hydra")
    if edit is not None:
        edit(with_hydra)
    (folder / SAVED_CONFIG).parent.mkdir(parents=True)
    OmegaConf.save(OmegaConf.create(with_hydra), folder / SAVED_CONFIG)
    (folder / "checkpoints").mkdir()
    torch.save({}, folder / "checkpoints" / "best.ckpt")
    return folder


def _as_saved_before_the_move(config: dict[str, Any]) -> None:
    """The config of a run saved while the precision was a key of the trainer node."""
    config["trainer"]["float32_matmul_precision"] = config.pop("float32_matmul_precision")


@pytest.mark.parametrize("edit", [None, _as_saved_before_the_move], ids=["now", "saved before"])
def test_every_node_of_a_saved_run_instantiates(tmp_path: Path, edit: Any, monkeypatch):
    """research-eval's side: the eval entry config names nothing to build, and the run's own
    saved config (also one saved before `float32_matmul_precision` left the trainer) builds
    node by node."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    run_dir = _saved_run(tmp_path / "run", ["float32_matmul_precision=high"], edit)
    cfg = research.compose("eval", [f"run_dir={run_dir}"])
    assert instantiate_every_node(cfg) == {}
    config = saved_run_config(run_dir)
    assert config["float32_matmul_precision"] == "high"
    assert "float32_matmul_precision" not in config["trainer"]
    built = instantiate_every_node(config)
    assert {"trainer", "model", "data", "loss", "optimizer"} <= set(built)
