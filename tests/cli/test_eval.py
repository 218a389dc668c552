"""research-eval re-tests a finished run from its own saved config; bad checkpoints fail clearly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import FAST, metrics, run_cli, run_dirs


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("eval")
    done = run_cli("research-train", *FAST, "logger=none", "model.net.channels=[16,32]", cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(root)
    return run


def test_eval_reproduces_the_test_metrics_of_the_best_checkpoint(finished_run: Path, workdir):
    done = run_cli("research-eval", f"run_dir={finished_run}", cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    m = metrics(evaluation)
    assert m["status"] == "completed"
    assert m["checkpoint"].endswith("checkpoints/best.ckpt")
    trained = metrics(finished_run)["best"]
    assert m["final"]["test/acc"] == pytest.approx(trained["test/acc"], abs=1e-6)
    assert m["final"]["test/loss"] == pytest.approx(trained["test/loss"], abs=1e-5)


def test_train_false_tests_the_checkpoint_ckpt_path_names(finished_run: Path, workdir: Path):
    """What the refusal of trainer.max_epochs=0 advises: `train=false ckpt_path=<file>` only
    tests, with the weights of that file."""
    best = finished_run / "checkpoints" / "best.ckpt"
    done = run_cli(
        "research-train",
        *FAST,
        "logger=none",
        "model.net.channels=[16,32]",
        "train=false",
        f"ckpt_path={best}",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (tested,) = run_dirs(workdir)
    trained = metrics(finished_run)["best"]
    assert metrics(tested)["final"]["test/acc"] == pytest.approx(trained["test/acc"], abs=1e-6)


def test_eval_of_a_corrupt_checkpoint_fails_in_one_line(finished_run: Path, workdir: Path):
    copy = workdir / "copy"
    shutil.copytree(finished_run, copy)
    (copy / "checkpoints" / "best.ckpt").write_bytes(b"not a checkpoint")
    done = run_cli("research-eval", f"run_dir={copy}", cwd=workdir)
    assert done.returncode == 1
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("research-eval:")]
    assert "is not a readable Lightning checkpoint" in line
    assert metrics(run_dirs(workdir, task="eval")[0])["status"] == "failed"


def test_eval_of_a_missing_checkpoint_or_run_dir_fails_clearly(finished_run: Path, workdir: Path):
    done = run_cli("research-eval", f"run_dir={finished_run}", "ckpt=/no/such.ckpt", cwd=workdir)
    assert done.returncode == 2 and "ckpt=/no/such.ckpt: no such file" in done.stderr
    done = run_cli("research-eval", f"run_dir={workdir}", cwd=workdir)
    assert done.returncode == 2 and "is not a run directory" in done.stderr


def test_eval_overrides_change_the_saved_config_for_this_evaluation(finished_run: Path, workdir):
    change = 'overrides=["data.normalize=false"]'
    done = run_cli("research-eval", f"run_dir={finished_run}", change, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    m = metrics(evaluation)
    assert m["eval_overrides"] == ["data.normalize=false"]
    assert m["final"]["test/loss"] != pytest.approx(metrics(finished_run)["best"]["test/loss"])
