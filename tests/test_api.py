"""The Python API does what the command line does, from anywhere: the same checks, the same run
dirs, paths under the project root rather than wherever the caller's working directory is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from omegaconf import OmegaConf

import research
from research.config.errors import ConfigError
from research.config.paths import config_dir, project_root

CHECKOUT = Path(__file__).parents[1]
FAST = ["debug=limit", "logger=none", "trainer.enable_progress_bar=false"]
FAST += ["trainer.enable_model_summary=false"]


def test_compose_build_and_train_as_the_cli_would(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a notebook's folder, outside the checkout
    root = tmp_path / "project"
    cfg = research.compose("train", [*FAST, f"paths.root={root}", "seed=3"])
    assert cfg.hydra.job.override_dirname and cfg.model.net.channels == [32, 64]
    datamodule, module = research.build(cfg)
    assert type(module).__name__ == "ClassificationModule" and module.net.config.dropout == 0.2
    cfg.optimizer.lr = 0.01  # edits apply to the run
    run = research.train(cfg)
    assert run.status == "completed" and run.run_dir.parent == root / "logs" / "train" / "runs"
    assert run.record["config"]["optimizer"]["lr"] == 0.01 and run.record["seed"] == 3
    assert 0.0 <= run.best["val/acc"] <= 1.0 and "test/acc" in run.final
    assert not (tmp_path / "logs").exists()


def test_mistakes_are_the_clis_one_line_errors():
    with pytest.raises(ConfigError, match="model=cnnn: no such config in conf/model/"):
        research.compose("train", ["model=cnnn"])
    with pytest.raises(ConfigError, match="optimizer.lr=-1.0 is out of range"):
        research.compose("train", ["optimizer.lr=-1"])
    with pytest.raises(ConfigError, match="needs a config from research.compose"):
        research.train(research.compose("train").model)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # Each was accepted before train shared research-train's pre-flight (research.run.plan):
        # a run dir was made and the run failed inside it, or it ran somewhere else than asked.
        (["ckpt_path=last"], "ckpt_path=last: no unfinished run with run id "),
        (["hparams_search=optuna"], "hparams_search=optuna takes effect in a multirun only"),
        (["launcher=submitit_local"], "launcher=submitit_local takes effect in a multirun only"),
        (["data.num_workers=100000"], "data.num_workers=100000 starts 100000 loader processes"),
    ],
)
def test_train_refuses_what_research_train_refuses_before_writing_anything(
    tmp_path: Path, overrides: list[str], expected: str
):
    cfg = research.compose("train", [*FAST, f"paths.root={tmp_path}", *overrides])
    with pytest.raises(ConfigError) as err:
        research.train(cfg)
    assert expected in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "logs").exists()


def test_train_never_reenters_another_run_dir(tmp_path: Path):
    """A run dir is one run: `hydra.run.dir` naming a completed run, or another config's run,
    is refused before Hydra overwrites that run's files (train ran in it before)."""
    done = tmp_path / "done"
    done.mkdir()
    (done / "metrics.json").write_text(json.dumps({"status": "completed", "run_id": "abc-s0"}))
    cfg = research.compose("train", [*FAST, f"paths.root={tmp_path}", f"hydra.run.dir={done}"])
    with pytest.raises(ConfigError, match="holds the completed run abc-s0, which is never re-"):
        research.train(cfg)
    other = tmp_path / "other"
    (other / ".hydra").mkdir(parents=True)
    saved = research.compose("train", [*FAST, "seed=1"])
    job = OmegaConf.masked_copy(saved, [k for k in saved if k != "hydra"])
    OmegaConf.save(job, other / ".hydra" / "config.yaml")  # as Hydra saves a job's config
    cfg = research.compose("train", [*FAST, f"paths.root={tmp_path}", f"hydra.run.dir={other}"])
    with pytest.raises(ConfigError, match=r"holds run \S+-s1, not this config's run \S+-s0 "):
        research.train(cfg)
    assert sorted(p.name for p in done.iterdir()) == ["metrics.json"]
    assert sorted(p.name for p in other.iterdir()) == [".hydra"]
    assert not (tmp_path / "logs").exists()


def test_train_with_ckpt_path_last_continues_the_unfinished_run_in_its_own_dir(tmp_path: Path):
    """As research-train does; train resumed it in a new run dir before."""
    overrides = [*FAST, f"paths.root={tmp_path}"]
    first = research.train(research.compose("train", overrides))
    (first.run_dir / "metrics.json").unlink()  # killed before it recorded how it ended
    again = research.train(research.compose("train", [*overrides, "ckpt_path=last"]))
    assert again.status == "completed" and again.run_dir == first.run_dir
    assert again.record["resumed_from"] == str(first.run_dir / "checkpoints" / "last.ckpt")
    assert [p.name for p in first.run_dir.parent.iterdir()] == [first.run_dir.name]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # Hydra's order is (config_name, overrides); these failed inside Hydra.
        ((["model=cnn"],), "config_name=['model=cnn'] is not an entry config; choose one of: "),
        (("trian", []), "config_name='trian' is not an entry config; choose one of: eval, train"),
        (("train", "model=cnn"), "overrides='model=cnn' must be a list of strings"),
    ],
)
def test_arguments_in_the_wrong_order_or_form_are_one_line(args: tuple, expected: str):
    with pytest.raises(ConfigError) as err:
        research.compose(*args)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_the_project_root_never_silently_follows_the_working_directory(
    tmp_path: Path, monkeypatch, capsys
):
    monkeypatch.delenv("RESEARCH_ROOT")
    monkeypatch.chdir(tmp_path)
    assert project_root() == CHECKOUT  # the checkout that holds the configs in use
    copied = tmp_path / "elsewhere" / "conf"
    shutil.copytree(config_dir(), copied)
    monkeypatch.setenv("RESEARCH_CONFIG_DIR", str(copied))  # configs outside any project
    assert project_root() == tmp_path
    assert f"runs and data go under the current directory {tmp_path}" in capsys.readouterr().err
    (tmp_path / "elsewhere" / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    assert project_root() == tmp_path / "elsewhere"


@pytest.mark.slow
def test_the_api_notebook_runs_outside_the_checkout(tmp_path: Path, monkeypatch):
    notebook = tmp_path / "analysis" / "python_api.ipynb"
    notebook.parent.mkdir()
    shutil.copy(CHECKOUT / "notebooks" / "python_api.ipynb", notebook)
    nb = nbformat.read(notebook, as_version=4)
    (params,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    params.source = f"overrides = {json.dumps(FAST)}"
    root = tmp_path / "root"
    monkeypatch.setenv("RESEARCH_ROOT", str(root))
    NotebookClient(
        nb, timeout=300, resources={"metadata": {"path": str(notebook.parent)}}
    ).execute()
    (run_dir,) = (root / "logs" / "train" / "runs").iterdir()
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == "completed"
    outputs = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert f"completed {run_dir}" in outputs
