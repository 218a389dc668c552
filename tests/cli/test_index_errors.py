"""research-index given wrong inputs: every mistake after its argument check is one line and exit
status 2, a failing build one line and exit status 1; nothing is left in the out folder, and a
copied run dir cannot run code through its saved config."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from research.utils.engine_versions import version_base
from tests.helpers.beir_files import write_beir
from tests.helpers.cli import run_cli

# Most tests build an index with a MiniLM ColBERT: about 8 s for the module on 2 cores.
pytestmark = pytest.mark.slow

# A small ColBERT (MiniLM, 32-dim projection) over the tiny BEIR folder.
COLBERT = [
    "experiment=colbert_stdlib",
    "data=beir",
    "model.net.max_length_document=48",
    "model.net.embedding_size=32",
]


def _save_run(run: Path, overrides: list[str]) -> Path:
    """A run dir as research-train leaves it (its saved config), without training."""
    from research.config.paths import config_dir

    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        cfg = compose(config_name="train", overrides=overrides)
    (run / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    (run / "checkpoints").mkdir()
    return run


@pytest.fixture(scope="module")
def colbert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(run dir, BEIR folder): the run's checkpoint holds the untrained network's weights."""
    import torch

    from research.config.saved_run import saved_run_config
    from research.run.build import build_task

    root = tmp_path_factory.mktemp("index")
    beir = write_beir(root / "beir")
    run = _save_run(root / "run", [*COLBERT, f"data.path={beir}"])
    _, task = build_task(saved_run_config(run))
    torch.save({"state_dict": task.state_dict()}, run / "checkpoints" / "best.ckpt")
    return run, beir


def _index(*args: object, cwd: Path, code: int = 2) -> str:
    """research-index's one line on stderr (progress bars and library notices aside) for a
    command that exits with `code`."""
    done = run_cli("research-index", *map(str, args), cwd=cwd)
    assert done.returncode == code, done.stderr[-2000:]
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("research-index")]
    return line


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


def test_index_builds_only_declared_components_unless_trusted(colbert, tmp_path: Path):
    run, beir = colbert
    shared = _copy(run, tmp_path / "shared")
    saved = shared / ".hydra" / "config.yaml"
    config = OmegaConf.load(saved)
    config.model.net._args_ = [{"_target_": "os.mkdir", "_args_": [str(tmp_path / "ran")]}]
    OmegaConf.save(config, saved)
    line = _index(shared, beir, tmp_path / "out", cwd=tmp_path)
    assert "model.net._args_[0]._target_='os.mkdir' has no declaration" in line
    assert line.endswith("pass --trust-run-dir if you trust this run dir")
    assert not (tmp_path / "ran").exists() and not (tmp_path / "out").exists()
    # Trusted, its config is built as it says.
    run_cli(
        "research-index",
        *map(str, (shared, beir, tmp_path / "out")),
        "--trust-run-dir",
        cwd=tmp_path,
    )
    assert (tmp_path / "ran").is_dir()


def test_index_of_a_multirun_folder_names_its_jobs(colbert, tmp_path: Path):
    run, beir = colbert
    sweep = tmp_path / "sweep"
    for job in ("0_seed-0", "1_seed-1"):
        _copy(run, sweep / job)
    line = _index(sweep, beir, tmp_path / "out", cwd=tmp_path)
    assert "is a multirun folder holding 2 job run dirs (0_seed-0, 1_seed-1)" in line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model: {net: [1\n", "YAML syntax error"),
        ("[1, 2]\n", "it holds a list"),
        ("", "(no data, model, loss, optimizer, trainer node)"),
    ],
)
def test_index_of_a_damaged_saved_config_is_one_line(colbert, tmp_path, text, expected):
    run, beir = colbert
    copy = _copy(run, tmp_path / "copy")
    (copy / ".hydra" / "config.yaml").write_text(text)
    line = _index(copy, beir, tmp_path / "out", cwd=tmp_path)
    assert ".hydra/config.yaml is damaged" in line and expected in line


def test_index_of_a_run_without_a_search_index_is_refused(tmp_path: Path):
    run = _save_run(tmp_path / "cnn", ["experiment=cnn_digits"])
    (run / "checkpoints" / "best.ckpt").write_bytes(b"never read")
    line = _index(run, write_beir(tmp_path / "beir"), tmp_path / "out", cwd=tmp_path)
    assert "trained research.tasks.classification.ClassificationModule, which has no search" in line


def test_wrong_arguments_after_the_argument_check_are_one_line(colbert, tmp_path: Path):
    run, beir = colbert
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "corpus.jsonl").write_text("\n")
    assert _index(run, beir, tmp_path / "o", "--batch-size", "0", cwd=tmp_path).endswith(
        "--batch-size 0 must be at least 1"
    )
    assert "holds no documents" in _index(run, empty, tmp_path / "o", cwd=tmp_path)
    line = _index(run, beir, beir / "corpus.jsonl" / "out", cwd=tmp_path)
    assert "corpus.jsonl is a file, not a folder" in line
    line = _index(run, beir, tmp_path / "o", "--param", "nbits=[1", cwd=tmp_path)
    assert "is not a YAML value" in line
    assert not (tmp_path / "o").exists()


def test_a_bad_corpus_or_checkpoint_found_while_building_is_one_line(colbert, tmp_path: Path):
    run, beir = colbert
    bad = _copy(beir, tmp_path / "bad")
    (bad / "corpus.jsonl").write_text('{"_id": "1", "text": "ok"}\n{not json\n')
    line = _index(run, bad, tmp_path / "out", cwd=tmp_path)
    assert line.startswith("research-index: error: ") and "corpus.jsonl:2 must be" in line
    broken = _copy(run, tmp_path / "broken")
    (broken / "checkpoints" / "best.ckpt").write_bytes(b"not a checkpoint")
    line = _index(broken, beir, tmp_path / "out", cwd=tmp_path)
    assert "error: --ckpt best: " in line  # the option as research-index spells it
    assert "best.ckpt: not a checkpoint (torch.save writes a zip archive)" in line
    line = _index(run, beir, tmp_path / "out", "--ckpt", "no.ckpt", cwd=tmp_path)
    assert "error: --ckpt no.ckpt: no such file; choose best, last or a .ckpt file" in line
    assert not (tmp_path / "out").exists()


def test_a_checkpoint_of_other_sizes_names_the_weight_and_both_shapes(colbert, tmp_path: Path):
    import torch

    run, beir = colbert
    resized = _copy(run, tmp_path / "resized")
    best = resized / "checkpoints" / "best.ckpt"
    state = torch.load(best, weights_only=True)["state_dict"]
    name = next(k for k, v in state.items() if v.ndim == 2)
    state[name] = torch.zeros(3, 5)
    torch.save({"state_dict": state}, best)
    line = _index(resized, beir, tmp_path / "out", cwd=tmp_path)
    assert f"{name} has shape [3, 5] in the checkpoint and" in line
    assert not (tmp_path / "out").exists()


def test_a_failing_build_is_one_line_exit_1_and_leaves_no_out_folder(
    colbert, tmp_path, monkeypatch
):
    from research.retrieval.exact import ExactSearcher

    def full_disk(self: ExactSearcher, path: Path) -> None:
        path.mkdir()
        (path / "part").write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ExactSearcher, "save", full_disk)
    run, beir = colbert
    line = _index(run, beir, tmp_path / "out", cwd=tmp_path, code=1)
    assert line == (
        "research-index: failed: OSError: [Errno 28] No space left on device; nothing saved in "
        f"{tmp_path / 'out'}"
    )
    assert not (tmp_path / "out").exists()
