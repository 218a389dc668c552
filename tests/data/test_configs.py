"""Each datamodule is built from its one declaration: a wrong value fails the same one-line way
through the declaration and through the constructor, and the YAML lists exactly its fields."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from research.config.errors import ConfigError
from research.config.registry import declaration
from research.config.schema import Schema
from research.data import configs
from research.data.beir import BEIRDataModule
from research.data.codesearch import StdlibCodeSearchDataModule
from research.data.digits import DigitsDataModule
from research.data.hf_text import HFTextDataModule
from research.data.listops import ListOpsDataModule
from research.data.recall import AssociativeRecallDataModule
from research.data.stdlib_modules import StdlibModulesDataModule
from research.data.stdlib_text import StdlibTextDataModule
from research.data.vision import CIFAR10DataModule

CONF = Path(__file__).parents[2] / "conf" / "data"

CASES = [
    (DigitsDataModule, {"val_fraction": 1.0}, "ImageData.val_fraction=1.0 is out of range"),
    (CIFAR10DataModule, {"batch_size": 0}, "ImageData.batch_size=0 is out of range"),
    (
        AssociativeRecallDataModule,
        {"num_keys": 8, "eval_num_pairs": [12]},
        "AssociativeRecall.num_keys=8 must be >= the most pairs asked (12)",
    ),
    (ListOpsDataModule, {"min_len": 70}, "ListOps.max_len=64 must be >= min_len=70"),
    (StdlibTextDataModule, {"vocab_size": 50}, "StdlibText.vocab_size=50 is out of range"),
    (
        StdlibModulesDataModule,
        {"val_fraction": 0.5, "test_fraction": 0.5},
        "StdlibModules.test_fraction plus val_fraction must be < 1",
    ),
    (HFTextDataModule, {"max_len": "long"}, "HFText.max_len='long' must be int"),
    (BEIRDataModule, {"path": "x", "seed": -1}, "BEIRData.seed=-1 is out of range"),
    (
        StdlibCodeSearchDataModule,
        {"min_code_lines": 0},
        "StdlibCodeSearch.min_code_lines=0 is out of range",
    ),
    (StdlibCodeSearchDataModule, {"path": "x"}, "StdlibCodeSearch.path is not an option"),
]


def _declaration(datamodule: type) -> type[Schema]:
    """The declaration of `datamodule` (under the `_target_` the YAML uses)."""
    (target,) = [
        str(OmegaConf.load(yaml)["_target_"])
        for yaml in CONF.glob("*.yaml")
        if str(OmegaConf.load(yaml)["_target_"]).endswith("." + datamodule.__name__)
    ][:1]
    schema = declaration(target)
    assert schema is not None
    return schema


@pytest.mark.parametrize(("datamodule", "params", "message"), CASES)
def test_a_wrong_value_fails_in_one_line_both_ways(datamodule, params, message):
    for build in (datamodule, _declaration(datamodule).build):
        with pytest.raises(ConfigError) as err:
            build(**params) if build is datamodule else build(None, params)
        assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_constructor_keeps_the_checked_declaration():
    config = configs.StdlibCodeSearchConfig(min_query_words=5, eval_corpus="full")
    module = StdlibCodeSearchDataModule(config)
    assert module.config is config and module.path is not None and module.name is None
    assert StdlibCodeSearchDataModule(min_query_words=5).config.eval_corpus == "split"
    assert DigitsDataModule().config == configs.ImageDataConfig()
    with pytest.raises(ConfigError, match="ImageData: pass a ImageDataConfig or keyword"):
        DigitsDataModule(configs.ImageDataConfig(), seed=3)
    with pytest.raises(ConfigError, match="config must be a BEIRDataConfig"):
        BEIRDataModule(configs.StdlibCodeSearchConfig())
    bad = configs.StdlibModulesConfig(val_fraction=0.6, test_fraction=0.6)
    with pytest.raises(ConfigError, match="StdlibModules.test_fraction plus val_fraction"):
        StdlibModulesDataModule(bad)


@pytest.mark.parametrize("yaml", sorted(CONF.glob("*.yaml")), ids=lambda path: path.stem)
def test_each_data_yaml_sets_only_declared_fields(yaml: Path):
    node = OmegaConf.to_container(OmegaConf.load(yaml), resolve=False)
    schema = declaration(node.pop("_target_"))
    assert schema is not None and schema.__module__ == "research.data.configs"
    assert set(node) <= {field.name for field in dataclasses.fields(schema)}


def test_a_builders_local_data_files_must_each_match_a_file(tmp_path: Path):
    from research.data.configs import check_data_files

    (tmp_path / "a.txt").write_text("a document\n")
    check_data_files("data", str(tmp_path / "*.txt"))
    check_data_files("data", {"train": [str(tmp_path / "a.txt")], "test": "https://host/t.txt"})
    given = {"train": str(tmp_path / "a.txt"), "test": str(tmp_path / "b.txt")}
    with pytest.raises(ConfigError, match=r"^data\.data_files\.test='.*/b\.txt' matches no file$"):
        check_data_files("data", given)
