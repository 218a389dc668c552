"""Run names people read, and a git state that counts untracked files as dirty."""

from __future__ import annotations

import subprocess
from pathlib import Path

from research.tracking.naming import meaningful_overrides, run_name
from research.tracking.provenance import git_state


def test_ablation_runs_are_named_variant_and_seed():
    assert run_name({"variant": "momentum+raw", "seed": 2}, ["optimizer.momentum=0.9"]) == (
        "momentum+raw-s2"
    )


def test_other_runs_are_named_by_their_meaningful_overrides():
    overrides = ["optimizer.lr=0.01", "trainer.enable_progress_bar=false", "logger=none", "seed=3"]
    assert meaningful_overrides(overrides) == ["optimizer.lr=0.01"]
    assert run_name({"seed": 3, "task_name": "train"}, overrides) == "optimizer.lr=0.01,seed=3"
    assert run_name({"seed": 0, "task_name": "train", "trial": 4}, ["trial=4"]) == ("trial4,seed=0")
    assert run_name({"seed": 0, "task_name": "train"}, ["seed=0"]) == "train-s0"


def test_untracked_files_make_the_checkout_dirty(tmp_path: Path):
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("logs/\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "run.txt").write_text("ignored output\n")
    assert git_state(tmp_path)["dirty"] is False  # ignored files do not count
    (tmp_path / "new_module.py").write_text("y = 2\n")
    assert git_state(tmp_path)["dirty"] is True
