"""What a run builds from its config holds plain lists and dicts, not OmegaConf containers:
they reach checkpoints (which every loader here reads weights-only) and libraries' type checks."""

from __future__ import annotations

import io

import torch
from omegaconf import DictConfig, ListConfig
from torch.optim.lr_scheduler import LambdaLR

from research.api import build, compose
from research.config.instantiate import instantiate_plain, trusting


def _holds_omegaconf(value: object) -> bool:
    if isinstance(value, (DictConfig, ListConfig)):
        return True
    if isinstance(value, dict):
        return any(_holds_omegaconf(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_omegaconf(v) for v in value)
    return False


def test_the_optimizer_and_its_checkpointed_state_hold_plain_values():
    _, task = build(compose("train", ["optimizer=adam", "optimizer.betas=[0.9,0.98]"]))
    assert type(task.optimizer_factory.keywords["betas"]) is list
    optimizer = task.optimizer_factory(task.parameters())
    state = optimizer.state_dict()
    assert not _holds_omegaconf(state["param_groups"])
    saved = io.BytesIO()
    torch.save(state, saved)
    saved.seek(0)
    loaded = torch.load(saved, weights_only=True)
    assert tuple(loaded["param_groups"][0]["betas"]) == (0.9, 0.98)


def test_objects_handed_in_stay_themselves_inside_plain_lists():
    plugin = LambdaLR  # any object that is not a config value
    node = {"_target_": "builtins.dict", "sizes": [1, 2]}
    with trusting(node):  # undeclared: Hydra 1.4's allow-list must be told
        built = instantiate_plain(node, plugins=[plugin])
    assert type(built["sizes"]) is list and built["sizes"] == [1, 2]
    assert type(built["plugins"]) is list and built["plugins"][0] is plugin
