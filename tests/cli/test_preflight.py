"""Mistakes this machine can reveal before torch loads: one line, exit 2, no run dir left behind."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from research.config.compose import compose_all
from research.run.preflight import AVAILABLE, not_a_checkpoint
from tests.helpers.beir_files import write_beir
from tests.helpers.cli import run_cli
from tests.helpers.read_only import read_only


def _refused(done: subprocess.CompletedProcess[str], prog: str = "research-train") -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"{prog}: error: ")
    return line


def test_a_missing_resume_file_is_refused_before_a_run_dir_exists(workdir: Path):
    line = _refused(run_cli("research-train", "ckpt_path=/nope/last.ckpt", cwd=workdir))
    assert "ckpt_path=/nope/last.ckpt: no such file" in line
    line = _refused(run_cli("research-train", "ckpt_path=last", cwd=workdir))
    assert "ckpt_path=last: no unfinished run with run id" in line
    assert not (workdir / "logs").exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"not a checkpoint", "not a checkpoint (torch.save writes a zip archive)"),
        (None, "a zip archive, but not a checkpoint (torch.save writes <folder>/data.pkl in it)"),
    ],
)
def test_a_resume_file_that_is_no_checkpoint_is_refused_before_a_run_dir_exists(
    workdir: Path, content: bytes | None, problem: str
):
    """Found only when Lightning loaded it, after the run dir and the W&B run were made."""
    resume = workdir / "resume.ckpt"
    if content is None:
        with zipfile.ZipFile(resume, "w") as archive:
            archive.writestr("notes.txt", "a zip of something else")
    else:
        resume.write_bytes(content)
    line = _refused(run_cli("research-train", f"ckpt_path={resume}", cwd=workdir))
    assert f"ckpt_path={resume}: {problem}; give a .ckpt file" in line
    assert not (workdir / "logs").exists()


@pytest.mark.parametrize("zipfile_format", [True, False])
def test_every_file_torch_save_writes_passes_the_checkpoint_check(
    tmp_path: Path, zipfile_format: bool
):
    """The check reads the format only: torch.save's zip archive, or its legacy format."""
    saved = tmp_path / "saved.ckpt"
    torch.save({"state_dict": {}}, saved, _use_new_zipfile_serialization=zipfile_format)
    assert not_a_checkpoint(saved) is None


@pytest.mark.slow
def test_a_datasets_missing_files_are_refused_before_a_run_dir_exists(workdir: Path):
    """They were found when the data was set up, after the run dir and W&B run were made; a
    config that is only composed (`--cfg job`, an ablation's plan) is not refused for them."""
    beir = write_beir(workdir / "beir")
    (beir / "qrels" / "dev.tsv").unlink()
    teacher = ["data.val_fraction=0.1", "loss=distillation", f"data.distillation_file={workdir}/t"]
    cases = [
        ([f"data.path={workdir}/none"], f"data.path='{workdir}/none' is not a folder; a BEIR"),
        (
            [],
            f"data.path='{beir}' has no qrels/dev.tsv; a BEIR folder holds corpus.jsonl, "
            "queries.jsonl and qrels/<split>.tsv (its splits: test, train); without a dev split, "
            "data.val_fraction=0.1 validates on a tenth of the train queries",
        ),
        (teacher, f"data.distillation_file='{workdir}/t' is not a file; give its path or null"),
    ]
    for extra, expected in cases:
        args = ["experiment=colbert_stdlib", "data=beir", f"data.path={beir}", *extra]
        line = _refused(run_cli("research-train", *args, cwd=workdir))
        assert expected in line, line
        shown = run_cli("research-train", *args, "--cfg", "job", cwd=workdir)
        assert shown.returncode == 0, shown.stderr[-2000:]
    assert not (workdir / "logs").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            [
                "model=transformer_lm",
                "data=hf_lm",
                "data.name=text",
                "data.data_files={{train: {none}}}",
            ],
            "data.data_files.train='{none}' matches no file",
        ),
        (["data=mnist"], "data.data_dir='{data}' lacks MNIST/raw/train-images-idx3-ubyte; "),
    ],
)
def test_local_dataset_files_that_are_not_there_are_refused_before_a_run_dir_exists(
    workdir: Path, args: list[str], expected: str
):
    """Local text files of a datasets builder, and torchvision's files without download."""
    where = {"none": workdir / "none" / "*.txt", "data": workdir / "d"}
    args = [a.format(**where) for a in args]
    line = _refused(run_cli("research-train", *args, f"paths.data_dir={workdir}/d", cwd=workdir))
    assert expected.format(**where) in line, line
    assert not (workdir / "logs").exists()


def test_a_log_dir_that_is_a_file_is_refused(workdir: Path):
    (workdir / "taken").write_text("a file\n")
    line = _refused(run_cli("research-train", f"paths.log_dir={workdir}/taken/logs", cwd=workdir))
    assert f"paths.log_dir={workdir}/taken/logs: {workdir}/taken is a file" in line


@pytest.fixture
def read_only_dir(tmp_path: Path):
    folder = tmp_path / "ro"
    folder.mkdir()
    with read_only(folder):
        yield folder


def test_a_read_only_log_dir_is_refused(workdir: Path, read_only_dir: Path):
    line = _refused(run_cli("research-train", f"paths.log_dir={read_only_dir}/logs", cwd=workdir))
    assert f"cannot write in {read_only_dir}" in line and "Read-only file system" in line


def test_an_accelerator_this_machine_lacks_is_refused(workdir: Path):
    missing = next(name for name in ("mps", "tpu", "gpu") if not AVAILABLE[name]())
    line = _refused(run_cli("research-train", f"trainer.accelerator={missing}", cwd=workdir))
    assert f"trainer.accelerator={missing}: this machine has no {missing} device" in line
    assert not (workdir / "logs").exists()


def _fake_run(folder: Path, config_name: str, overrides: list[str]) -> Path:
    """A folder with the saved config a run of this command line would have, and nothing else."""
    (cfg,) = compose_all(config_name, overrides)
    (folder / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, folder / ".hydra" / "config.yaml")
    (folder / "checkpoints").mkdir()
    return folder


@pytest.mark.slow
def test_eval_of_what_is_not_a_finished_run_is_refused(workdir: Path):
    evaluation = _fake_run(workdir / "an_eval", "eval", ["run_dir=/some/run"])
    line = _refused(run_cli("research-eval", f"run_dir={evaluation}", cwd=workdir), "research-eval")
    assert "is a research-eval run, not a training run" in line
    unfinished = _fake_run(workdir / "no_checkpoint", "train", [])
    line = _refused(run_cli("research-eval", f"run_dir={unfinished}", cwd=workdir), "research-eval")
    assert "ckpt=best:" in line and "does not exist; the run saved: none" in line
    line = _refused(
        run_cli("research-eval", f"run_dir={unfinished}", "ckpt=/no/such.ckpt", cwd=workdir),
        "research-eval",
    )
    assert "ckpt=/no/such.ckpt: no such file" in line
    assert not (workdir / "logs").exists()
