"""The pre-flight is one home: research-train and the Python API refuse a mistake with the same
line, before anything is written, and the API's plan holds a run dir as the command line's does."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

import research
from research.config.errors import ConfigError
from research.run.plan import plan_config
from tests.helpers.cli import run_cli

FAST = ["debug=limit", "logger=none"]


@pytest.mark.parametrize(
    "overrides",
    [
        ["ckpt_path=/nope/last.ckpt"],
        ["ckpt_path=last"],
        ["launcher=submitit_slurm"],
    ],
)
def test_the_cli_and_the_api_refuse_a_mistake_with_the_same_line(
    tmp_path: Path, overrides: list[str]
):
    done = run_cli("research-train", *FAST, *overrides, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    with pytest.raises(ConfigError) as err:
        research.train(research.compose("train", [*FAST, *overrides]))
    assert done.stderr.strip() == f"research-train: error: {err.value}"
    assert not (tmp_path / "logs").exists()


def test_the_api_plan_pins_its_claimed_run_dir_in_a_copy_and_leaves_nothing_unused(
    tmp_path: Path,
):
    cfg = research.compose("train", FAST)
    before = OmegaConf.to_yaml(cfg)
    plan, job = plan_config("research-train", cfg)
    assert plan.claim is not None and plan.claim.run_dir.is_dir()
    assert Path(job.hydra.run.dir) == plan.claim.run_dir
    assert plan.claim.run_dir.parent == tmp_path / "logs" / "train" / "runs"
    assert OmegaConf.to_yaml(cfg) == before  # the caller's config, its run dir's time unresolved
    plan.release()  # no run started in it
    assert not plan.claim.run_dir.exists()
