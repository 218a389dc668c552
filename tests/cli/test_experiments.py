"""Every experiment config runs end to end with ++trainer.fast_dev_run=true."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import metrics, run_cli, run_dirs
from tests.helpers.image_files import write_cifar10, write_mnist

EXPERIMENTS = sorted(
    p.stem for p in (Path(__file__).parents[2] / "conf" / "experiment").glob("*.yaml")
)


# Experiments whose corpus takes minutes to build in full run on a small part of it here.
SMALL_DATA = {
    "context_extension": ["data.max_files=80", "data.vocab_size=400", "data.eval_tokens=2048"],
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny files in the official formats for the experiments that use torchvision datasets."""
    root = tmp_path_factory.mktemp("data")
    write_mnist(root, "MNIST")
    write_mnist(root, "FashionMNIST")
    write_cifar10(root)
    return root


# colbert_stdlib encodes its corpus with MiniLM even for one batch: over a minute on 2 cores;
# transformer_mlm_stdlib, transformer_stdlib_modules and xiong2020 (data=stdlib_modules)
# tokenize the stdlib's docstrings first (about 10 s each); transformer_listops and
# context_extension (a tokenizer trained on 80 files) about 3.5 s.
SLOW = {
    "colbert_stdlib",
    "context_extension",
    "transformer_mlm_stdlib",
    "transformer_stdlib_modules",
    "transformer_listops",
    "xiong2020",
}


@pytest.mark.parametrize(
    "experiment",
    [pytest.param(e, marks=pytest.mark.slow) if e in SLOW else e for e in EXPERIMENTS],
)
def test_experiment_smoke(experiment: str, workdir: Path, data_dir: Path):
    done = run_cli(
        "research-train",
        f"experiment={experiment}",
        "++trainer.fast_dev_run=true",
        "logger=none",
        *SMALL_DATA.get(experiment, []),
        cwd=workdir,
        env={"RESEARCH_DATA_DIR": str(data_dir)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    m = metrics(run)
    assert m["status"] == "completed" and m["experiment"] == experiment
