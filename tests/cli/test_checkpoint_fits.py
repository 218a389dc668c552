"""A checkpoint of another config's sizes, given to research-eval or to a resume, fails in one line
naming the first weight that differs and both shapes, never with torch's multi-line report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import FAST, metrics, run_cli, run_dirs

SMALL = "model.net.channels=[8,16]"
SHAPES = (
    "net.features.0.weight has shape [32, 1, 3, 3] in the checkpoint and [8, 1, 3, 3] in the "
    "model (10 other weights differ too)"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run of the default CNN and one of a smaller CNN."""
    root = tmp_path_factory.mktemp("two_sizes")
    for extra in ([], [SMALL]):
        done = run_cli("research-train", *FAST, "logger=none", *extra, cwd=root)
        assert done.returncode == 0, done.stderr[-2000:]
    default, small = run_dirs(root)
    return default, small


def _one_line(prog: str, stderr: str) -> str:
    assert "Traceback" not in stderr and "size mismatch" not in stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith(f"{prog}:")]
    return line


def test_eval_of_a_checkpoint_of_other_sizes_names_the_weight(runs, workdir: Path):
    default, small = runs
    other = default / "checkpoints" / "last.ckpt"
    done = run_cli("research-eval", f"run_dir={small}", f"ckpt={other}", cwd=workdir)
    assert done.returncode == 1
    assert SHAPES in _one_line("research-eval", done.stderr)
    assert SHAPES in metrics(run_dirs(workdir, task="eval")[0])["error"]


def test_resuming_from_a_checkpoint_of_other_sizes_names_the_weight(runs, workdir: Path):
    default, _ = runs
    other = default / "checkpoints" / "last.ckpt"
    done = run_cli("research-train", *FAST, "logger=none", SMALL, f"ckpt_path={other}", cwd=workdir)
    assert done.returncode == 1
    assert SHAPES in _one_line("research-train", done.stderr)
