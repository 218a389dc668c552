"""A job's config from a shared composition is Hydra's own composition of that job: the same
values, interpolations unresolved, the same `hydra` node, the same struct flags; a mistake is
refused with the same line."""

from __future__ import annotations

import pytest
from omegaconf import DictConfig, OmegaConf

from research.config import compose as composing
from research.config.compose import compose_all, expand
from research.config.errors import ConfigError
from research.config.shared_compositions import shared_compositions

SWEEPS = [
    # values only, one composition for every job: a dotless key, a dict merged into a node, a list
    # replacing one
    [
        "seed=1,2",
        "optimizer={lr:0.01,weight_decay:0.1},{lr:0.02}",
        "model.net.channels=[8,16],[16,32]",
    ],
    # config choices and values: one composition per choice
    ["model=cnn,dense", "trainer.max_epochs=1,2"],
    # adding, forcing, deleting keys
    ["+extra_note=a,b", "++trainer.max_time=00:00:10:00", "~loss.label_smoothing"],
    # an experiment, and a hydra setting that the override dirname reads
    [
        "experiment=transformer_recall",
        "model.net.d_model=32,64",
        "hydra.job.config.override_dirname.exclude_keys=[seed]",
        "seed=4,5",
    ],
]


def _hydras_own(config_name: str, combo: list[str]) -> DictConfig:
    with composing._hydra():
        return composing._compose_one(config_name, combo)


def _same(shared: DictConfig, own: DictConfig) -> None:
    assert OmegaConf.to_container(shared, resolve=False) == OmegaConf.to_container(
        own, resolve=False
    )
    assert OmegaConf.is_struct(shared) and OmegaConf.is_struct(own)
    assert OmegaConf.is_readonly(shared.hydra) == OmegaConf.is_readonly(own.hydra)


@pytest.mark.parametrize("overrides", SWEEPS, ids=" ".join)
def test_each_job_of_a_sweep_is_hydras_own_composition(overrides: list[str]):
    combos = expand(overrides)
    assert len(combos) > 1
    shared = compose_all("train", overrides)
    for config, combo in zip(shared, combos, strict=True):
        _same(config, _hydras_own("train", combo))


def test_jobs_composed_in_one_scope_share_across_calls_and_stay_their_own():
    """An ablation plans each job with a call of its own inside one scope; changing one job's
    config leaves the next job's alone."""
    with shared_compositions():
        first = compose_all("train", ["seed=1", "optimizer.lr=0.5"], single=True)[0]
        first.optimizer.lr = 9.0
        second = compose_all("train", ["seed=2"], single=True)[0]
    own = _hydras_own("train", ["seed=1", "optimizer.lr=0.5"])
    own.optimizer.lr = 9.0
    _same(first, own)
    _same(second, _hydras_own("train", ["seed=2"]))


@pytest.mark.parametrize(
    "overrides",
    [
        ["seed=1,2", "optimizer.lrr=0.1"],  # a value for a key no config holds
        ["model=cnn,nope", "seed=1"],  # an option the group does not have
    ],
    ids=" ".join,
)
def test_a_mistake_in_a_sweep_is_refused_as_hydras_composition_refuses_it(overrides):
    refused = None
    for combo in expand(overrides):
        try:
            _hydras_own("train", combo)
        except ConfigError as err:
            refused = str(err)
            break
    assert refused, overrides
    with pytest.raises(ConfigError) as shared:
        compose_all("train", overrides)
    assert str(shared.value) == refused
