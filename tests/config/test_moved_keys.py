"""`trainer.float32_matmul_precision` moved to the top-level `float32_matmul_precision` (the run
applies it; Lightning's Trainer takes no such argument, so the trainer node did not instantiate
with Hydra's own `instantiate`). Runs saved before still load and keep their ids; the old place
on a command line is one line that names the new one."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import research
from research.config.compose import check_command_line
from research.config.errors import ConfigError
from research.config.moved_keys import MOVED_KEYS, at_new_places
from research.config.saved_run import SAVED_CONFIG, saved_run_config
from research.config.validate import validate
from research.tracking.identity import config_hash, run_id
from tests.config.test_run_ids import GOLDEN, portable_hash


def _before_the_move(config: dict) -> dict:
    """`config` as a run resolved it while the precision was a key of the trainer node."""
    old = copy.deepcopy(config)
    old["trainer"]["float32_matmul_precision"] = old.pop("float32_matmul_precision")
    return old


@pytest.mark.parametrize(
    "override",
    [
        "trainer.float32_matmul_precision=high",
        "+trainer.float32_matmul_precision=high",
        "++trainer.float32_matmul_precision=high",
        "~trainer.float32_matmul_precision",
        "trainer.float32_matmul_precision=tf32",
    ],
)
def test_the_old_place_on_the_command_line_names_the_new_one(override: str):
    with pytest.raises(ConfigError) as err:
        research.compose("train", [override])
    value = override.partition("=")[2] or "null"
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{override}: trainer.float32_matmul_precision moved to ")
    assert message.endswith(f"write float32_matmul_precision={value}")


def test_a_sweep_of_the_old_place_names_the_new_one():
    line = "trainer.float32_matmul_precision=high,null"
    with pytest.raises(ConfigError, match=r"write float32_matmul_precision=high,null$"):
        check_command_line("train", [line])


def test_a_config_edited_in_python_is_refused_with_the_new_place():
    """Editing the composed config (`cfg.trainer.float32_matmul_precision = ...` in a notebook)
    reaches the trainer's declaration, which names the new place."""
    cfg = research.compose("train", [])
    OmegaConf.update(cfg, "trainer.float32_matmul_precision", "high", force_add=True)
    with pytest.raises(ConfigError, match=r"^trainer.float32_matmul_precision moved to float32_"):
        validate(cfg)


def test_the_new_place_is_checked_as_the_old_one_was():
    with pytest.raises(ConfigError, match=r"float32_matmul_precision='tf32' is not valid; choose"):
        research.compose("train", ["float32_matmul_precision=tf32"])


@pytest.mark.parametrize("value", [None, "high"])
def test_a_run_keeps_its_id_whichever_place_holds_the_precision(value):
    config = validate(research.compose("train", [f"float32_matmul_precision={value or 'null'}"]))
    assert run_id(_before_the_move(config)) == run_id(config)
    if value is None:  # left out at its default, as before it moved
        without = {k: v for k, v in config.items() if k != "float32_matmul_precision"}
        assert config_hash(without) == config_hash(config)


@pytest.mark.parametrize("name", [n for n in GOLDEN if "before it moved" in n])
def test_runs_that_set_the_old_key_have_their_recorded_ids(name: str):
    """The hashes in run_ids.json were computed with `trainer.float32_matmul_precision`."""
    expected = GOLDEN[name]
    assert (
        portable_hash(validate(research.compose("train", expected["overrides"])))
        == (expected["config_hash"])
    )


def _saved(run_dir: Path, edit=None) -> Path:
    cfg = research.compose("train", ["float32_matmul_precision=medium"])
    config = OmegaConf.to_container(cfg, resolve=False)
    config.pop("hydra")
    config = _before_the_move(config)
    if edit is not None:
        edit(config)
    (run_dir / SAVED_CONFIG).parent.mkdir(parents=True)
    OmegaConf.save(OmegaConf.create(config), run_dir / SAVED_CONFIG)
    return run_dir


def test_a_run_saved_before_the_move_loads_with_the_key_at_its_new_place(tmp_path: Path):
    config = saved_run_config(_saved(tmp_path))
    assert config["float32_matmul_precision"] == "medium"
    assert "float32_matmul_precision" not in config["trainer"]
    changed = saved_run_config(tmp_path, ["float32_matmul_precision=high"])
    assert changed["float32_matmul_precision"] == "high"


def test_a_run_saved_before_the_key_existed_takes_it_in_an_evaluation(tmp_path: Path):
    run_dir = _saved(tmp_path, lambda c: c["trainer"].pop("float32_matmul_precision"))
    assert saved_run_config(run_dir)["float32_matmul_precision"] is None
    changed = saved_run_config(run_dir, ["float32_matmul_precision=high"])
    assert changed["float32_matmul_precision"] == "high"


def test_an_evaluation_override_of_the_old_place_names_the_new_one(tmp_path: Path):
    run_dir = _saved(tmp_path)
    with pytest.raises(ConfigError, match=r"moved to float32_matmul_precision .*; write "):
        saved_run_config(run_dir, ["trainer.float32_matmul_precision=high"])


def test_a_value_at_the_new_place_wins_over_one_at_the_old():
    both = {"float32_matmul_precision": "high", "trainer": {"float32_matmul_precision": "medium"}}
    at_new_places(both)
    assert both == {"float32_matmul_precision": "high", "trainer": {}}
    assert set(MOVED_KEYS) == {"trainer.float32_matmul_precision"}


def test_help_on_the_old_place_names_the_new_one():
    from research.cli.help import node_help

    with pytest.raises(ConfigError, match=r"moved to float32_matmul_precision; --help float32_"):
        node_help("train", [], ["trainer.float32_matmul_precision"])
    assert "float32_matmul_precision  str or null" in node_help("train", [], ["run"])
