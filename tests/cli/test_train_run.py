"""A real training run on digits: the run dir, metrics.json, history, checkpoints, W&B ids."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

from research.tracking.wandb_reader import read_offline_run
from tests.helpers.cli import BIN, FAST, cli_env, metrics, run_cli, run_dirs, wandb_written


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One short training run with an override, shared by the tests that read what it left."""
    workdir = tmp_path_factory.mktemp("run")
    done = run_cli("research-train", *FAST, "optimizer.lr=0.003", cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    wandb_written()
    (run,) = run_dirs(workdir)
    return run


def test_run_dir_is_named_by_overrides_and_holds_config_checkpoints_history(finished: Path):
    assert "optimizer.lr-0.003" in finished.name
    assert (finished / ".hydra" / "config.yaml").is_file()
    assert (finished / "checkpoints" / "last.ckpt").is_file()
    assert (finished / "checkpoints" / "best.ckpt").is_file()
    history = (finished / "history.jsonl").read_text().splitlines()
    assert len(history) == 2  # debug=limit trains two epochs


def test_metrics_json_records_status_identity_config_and_provenance(finished: Path):
    m = metrics(finished)
    assert m["status"] == "completed" and m["error"] is None
    assert m["seed"] == 0 and m["run_id"] == f"{m['config_hash']}-s0"
    assert "optimizer.lr=0.003" in m["overrides"]
    assert m["config"]["optimizer"]["lr"] == 0.003
    assert m["git"].keys() == {"commit", "dirty"}
    assert m["versions"]["torch"] == torch.__version__.split("+")[0]
    assert m["wandb"]["mode"] == "offline"


def test_metrics_json_names_the_best_checkpoint_and_its_metrics(finished: Path):
    m = metrics(finished)
    assert m["monitor"] == "val/acc" and m["mode"] == "max"
    assert m["best"]["checkpoint"] == "checkpoints/best.ckpt"
    assert 0.0 <= m["best"]["test/acc"] <= 1.0 and "val/acc" in m["best"]


def test_checkpoint_carries_the_run_id_and_wandb_id(finished: Path):
    m = metrics(finished)
    checkpoint = torch.load(finished / "checkpoints" / "last.ckpt", weights_only=True)
    assert checkpoint["research"]["wandb_run_id"] == m["wandb"]["run_id"]
    assert checkpoint["research"]["run_id"] == m["run_id"]


def test_offline_wandb_run_holds_config_history_and_summary(finished: Path):
    m = metrics(finished)
    logged = read_offline_run(finished)  # what W&B would upload on `wandb sync`
    assert logged.run_id == m["wandb"]["run_id"]
    assert logged.project == "research" and logged.job_type == "train"
    assert logged.config["optimizer"]["lr"] == 0.003
    assert logged.config["model"]["net"]["channels"] == [32, 64]
    assert "optimizer.lr=0.003" in logged.config["overrides"]
    assert logged.config["git"]["commit"] == m["git"]["commit"]
    assert logged.config["versions"]["lightning"] == m["versions"]["lightning"]
    assert logged.config["run_id"] == m["run_id"]
    train_losses = [row["train/loss"] for row in logged.history if "train/loss" in row]
    val_accs = [row["val/acc"] for row in logged.history if "val/acc" in row]
    assert train_losses and len(val_accs) == 2
    assert val_accs[-1] == m["final"]["val/acc"]
    # One row a step: the learning rate beside the step's loss, an epoch's train metrics beside
    # its validation metrics.
    steps = [row["trainer/global_step"] for row in logged.history if "trainer/global_step" in row]
    assert len(steps) == len(set(steps))
    assert any("lr-Adam" in row and "train/loss" in row for row in logged.history)
    assert sum("val/acc" in row and "train/acc" in row for row in logged.history) == 2
    assert logged.summary["status"] == "completed"
    assert logged.summary["best/test/acc"] == m["best"]["test/acc"]
    assert logged.exit_code == 0


@pytest.mark.slow
def test_two_runs_started_together_get_distinct_dirs(workdir: Path):
    args = [str(BIN / "research-train"), "debug=fdr", "logger=none"]
    procs = [
        subprocess.Popen(args, cwd=workdir, env=cli_env(workdir), stdout=subprocess.DEVNULL)
        for _ in range(2)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    runs = run_dirs(workdir)
    assert len(runs) == 2 and runs[0].name != runs[1].name
    assert all(metrics(r)["status"] == "completed" for r in runs)


@pytest.mark.slow
def test_diverging_run_stops_with_status_diverged(workdir: Path):
    done = run_cli(
        "research-train", *FAST, "logger=none", "optimizer=sgd", "optimizer.lr=1e30", cwd=workdir
    )
    assert done.returncode == 1
    (run,) = run_dirs(workdir)
    m = metrics(run)
    assert m["status"] == "diverged"
    assert "train/loss became" in m["error"]
    assert "research-train: diverged: " in done.stderr


@pytest.mark.slow  # a W&B run started and its service stopped: over the 3 s of a quick test
def test_a_job_whose_data_fails_to_build_has_a_wandb_run_marked_failed(workdir: Path):
    # The W&B run exists before the data is built, so the failed job ends it as failed.
    impossible = ["data.max_depth=1", "data.max_args=2", "data.min_len=60", "data.max_len=64"]
    done = run_cli(
        "research-train", *FAST, "experiment=transformer_listops", *impossible, cwd=workdir
    )
    assert done.returncode == 1
    wandb_written()
    (run,) = run_dirs(workdir)
    m = metrics(run)
    assert m["status"] == "failed" and "no ListOps expression has 60..64 tokens" in m["error"]
    logged = read_offline_run(run)
    assert (logged.run_id, logged.exit_code) == (m["wandb"]["run_id"], 1)
    assert logged.summary["status"] == "failed" and logged.config["run_id"] == m["run_id"]


@pytest.mark.slow
def test_csv_logger_writes_metrics_into_the_run_dir(workdir: Path):
    done = run_cli("research-train", *FAST, "logger=csv", cwd=workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    (csv_file,) = run.glob("csv/version_*/metrics.csv")
    header = csv_file.read_text().splitlines()[0].split(",")
    assert {"val/acc", "train/loss_epoch", "epoch", "step"} <= set(header)
    assert not (run / "wandb").exists()


@pytest.mark.slow  # a real process with its own console: about 9 s
def test_the_console_shows_the_run_and_ends_with_one_summary_line(workdir: Path):
    """A fresh process with Python's warnings on, as a user runs it: no W&B banners, no
    Lightning tips or deprecation notices from inside Lightning, and a last line that says how
    the run went and where everything is."""
    done = run_cli(
        "research-train",
        "debug=limit",
        "trainer.enable_progress_bar=false",
        cwd=workdir,
        env={"PYTHONWARNINGS": "default", "WANDB_SILENT": None},
        subprocess=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = done.stdout + done.stderr
    for noise in ("wandb:", "Tip:", "TPU available", "is deprecated", "stepping batches", "`srun`"):
        assert noise not in console, noise
    (run,) = run_dirs(workdir)
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("research-train: completed in ")
    assert (
        "val/acc (max) best " in last
        and f"test/acc {metrics(run)['final']['test/acc']:.4g}" in last
    )
    assert f"run dir {run} (metrics.json, history.jsonl, checkpoints/)" in last
    (offline,) = (run / "wandb").glob("offline-run-*")
    assert last.endswith(f"upload with: wandb sync {offline}")
