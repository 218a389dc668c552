"""research-eval re-tests a finished run from its own saved config; bad checkpoints fail clearly."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

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
    assert m["float32_matmul_precision"] == "highest"  # as the run trained
    assert m["run_id"] == m["config_hash"]  # it has no seed of its own: not "<hash>-sNone"


@pytest.mark.slow
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


def test_eval_of_a_corrupt_checkpoint_is_refused_before_an_eval_run_dir_exists(
    finished_run: Path, workdir: Path
):
    copy = workdir / "copy"
    shutil.copytree(finished_run, copy)
    best = copy / "checkpoints" / "best.ckpt"
    best.write_bytes(b"not a checkpoint")
    done = run_cli("research-eval", f"run_dir={copy}", cwd=workdir)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"research-eval: error: ckpt=best: {best}: not a checkpoint (torch.save writes a zip "
        "archive); give another .ckpt file"
    )
    assert not run_dirs(workdir, task="eval")


def test_eval_of_a_torch_file_that_is_not_a_lightning_checkpoint_fails_in_one_line(
    finished_run: Path, workdir: Path
):
    """torch.save's format, so only loading it finds out: the evaluation fails and says why."""
    weights = workdir / "weights.pt"
    torch.save({"weight": torch.zeros(2)}, weights)
    done = run_cli("research-eval", f"run_dir={finished_run}", f"ckpt={weights}", cwd=workdir)
    assert done.returncode == 1
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("research-eval:")]
    assert f"checkpoint {weights} has no state_dict; it is not a Lightning .ckpt" in line
    assert metrics(run_dirs(workdir, task="eval")[0])["status"] == "failed"


def test_eval_of_a_missing_checkpoint_or_run_dir_fails_clearly(finished_run: Path, workdir: Path):
    done = run_cli("research-eval", f"run_dir={finished_run}", "ckpt=/no/such.ckpt", cwd=workdir)
    assert done.returncode == 2 and "ckpt=/no/such.ckpt: no such file" in done.stderr
    done = run_cli("research-eval", f"run_dir={workdir}", cwd=workdir)
    assert done.returncode == 2 and "is not a run directory" in done.stderr


@pytest.mark.slow
def test_eval_overrides_change_the_saved_config_for_this_evaluation(finished_run: Path, workdir):
    change = 'overrides=["data.normalize=false"]'
    done = run_cli("research-eval", f"run_dir={finished_run}", change, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    m = metrics(evaluation)
    assert m["eval_overrides"] == ["data.normalize=false"]
    assert m["final"]["test/loss"] != pytest.approx(metrics(finished_run)["best"]["test/loss"])


def test_eval_applies_the_float32_matmul_precision_of_its_config(finished_run: Path, workdir):
    change = 'overrides=["float32_matmul_precision=medium"]'
    done = run_cli("research-eval", f"run_dir={finished_run}", change, cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    assert metrics(evaluation)["float32_matmul_precision"] == "medium"
    assert torch.get_float32_matmul_precision() == "highest"  # put back after the job


def test_eval_takes_the_run_dir_as_a_bare_argument(finished_run: Path, workdir: Path):
    done = run_cli("research-eval", str(finished_run), "ckpt=last", cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (evaluation,) = run_dirs(workdir, task="eval")
    m = metrics(evaluation)
    assert m["source_run_dir"] == str(finished_run.resolve())
    assert m["checkpoint"].endswith("checkpoints/last.ckpt")
    assert m["command"] == f"research-eval {finished_run} ckpt=last"


def _refused(done, *expected: str) -> str:
    """The one line of a refusal (exit 2) that contains every `expected` text."""
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("research-eval: error: ")
    assert all(text in line for text in expected), line
    return line


def test_a_copied_run_dir_cannot_run_code_through_its_saved_config(finished_run, workdir):
    """The issue's case: a shared run dir whose loss is `torch.load` of a pickle that runs
    code. Refused in one line naming the key, before anything is built or written; the
    explicit opt-in builds it."""
    import pickle

    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    marker = workdir / "payload_ran"
    (workdir / "payload.pt").write_bytes(pickle.dumps(Payload()))
    shared = workdir / "shared_run"
    shutil.copytree(finished_run, shared)
    saved = shared / ".hydra" / "config.yaml"
    config = OmegaConf.load(saved)
    config.loss = {
        "_target_": "torch.load",
        "f": str(workdir / "payload.pt"),
        "weights_only": False,
    }
    OmegaConf.save(config, saved)
    done = run_cli("research-eval", str(shared), cwd=workdir)
    _refused(done, "loss._target_='torch.load' has no declaration", "trust_run_dir=true")
    assert not marker.exists() and run_dirs(workdir, task="eval") == []
    run_cli("research-eval", str(shared), "trust_run_dir=true", cwd=workdir)
    assert marker.is_dir()


def test_eval_of_a_multirun_folder_lists_its_jobs(finished_run: Path, workdir: Path):
    sweep = workdir / "multiruns" / "sweep"
    for job in ("0_seed-0", "1_seed-1"):
        shutil.copytree(finished_run, sweep / job)
    line = _refused(run_cli("research-eval", str(sweep), cwd=workdir))
    assert line.endswith(
        "is a multirun folder holding 2 job run dirs (0_seed-0, 1_seed-1), not a run "
        f"directory; pass one job's run dir instead, e.g. {sweep / '0_seed-0'}"
    )
    done = run_cli("research-eval", str(sweep / "0_seed-0"), str(sweep / "1_seed-1"), cwd=workdir)
    _refused(done, "one run dir per evaluation, got 2", "-m run_dir=")
    assert run_dirs(workdir, task="eval") == []


def test_eval_of_a_damaged_saved_config_is_one_line(finished_run: Path, workdir: Path):
    copy = workdir / "copy"
    shutil.copytree(finished_run, copy)
    saved = copy / ".hydra" / "config.yaml"
    saved.write_text(saved.read_text()[: len(saved.read_text()) // 3] + "\n  - [unclosed")
    _refused(
        run_cli("research-eval", f"run_dir={copy}", cwd=workdir), ".hydra/config.yaml is damaged"
    )
    saved.write_text("- not\n- a mapping\n")
    _refused(run_cli("research-eval", str(copy), cwd=workdir), "it holds a list")
    assert run_dirs(workdir, task="eval") == []


def test_an_unquoted_overrides_list_is_answered_with_its_quoted_form(tmp_path: Path, capsys):
    from research.cli.eval import main

    typed = "overrides=[data.batch_size=7,model.net.channels=[3,4]]"
    assert main([str(tmp_path), typed]) == 2
    assert capsys.readouterr().err == (
        f"research-eval: error: {typed}: quote each item, since Hydra reads '=' in an unquoted "
        "list item as a syntax error: "
        """'overrides=["data.batch_size=7","model.net.channels=[3,4]"]'\n"""
    )


def test_research_trains_spelling_of_the_checkpoint_is_answered_with_research_evals(
    tmp_path: Path, capsys
):
    from research.cli.eval import main

    assert main([str(tmp_path), "ckpt_path=last"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("research-eval: error: ckpt_path=last: no such key or config group; ")
    assert "did you mean ckpt?" in err and "+ckpt_path" not in err
