"""Train and evaluate in-process from a composed config, as lightning-hydra-template's tests do,
so a failure points at a function rather than at a subprocess's exit code."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from research.config.paths import config_dir
from research.tracking.run_dir import read_metrics
from research.utils.engine_versions import version_base

FAST = ["debug=limit", "logger=none", "trainer.enable_progress_bar=false"]


def _job_config(entry: str, overrides: list[str], output_dir: Path) -> DictConfig:
    """A composed config with Hydra's runtime node set and `.hydra/config.yaml` saved, as
    Hydra's launcher does before it calls a job."""
    cfg = compose(config_name=entry, overrides=overrides, return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(output_dir)
        cfg.hydra.overrides.task = overrides
    HydraConfig.instance().set_config(cfg)
    (output_dir / ".hydra").mkdir(parents=True)
    job = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    OmegaConf.save(job, output_dir / ".hydra" / "config.yaml")
    return cfg


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, object]]:
    from research.run.fit import train

    root = tmp_path_factory.mktemp("in_process")
    run_dir = root / "run"
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        outcome = train(_job_config("train", [*FAST, f"paths.log_dir={root}"], run_dir))
    yield run_dir, outcome


def test_train_returns_completed_with_the_best_monitored_value(trained):
    run_dir, outcome = trained
    assert outcome.status == "completed"
    saved = read_metrics(run_dir)
    assert saved is not None and saved["status"] == "completed"
    assert outcome.value == pytest.approx(saved["best"]["val/acc"])
    assert (run_dir / "checkpoints" / "best.ckpt").is_file()


def test_eval_rebuilds_the_same_task_and_reproduces_the_test_metrics(trained, tmp_path):
    from research.run.evaluate import CHECKPOINT_CALLBACKS_NOTICE, evaluate

    run_dir, _ = trained
    with (
        initialize_config_dir(config_dir=str(config_dir()), **version_base()),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        cfg = _job_config("eval", [f"run_dir={run_dir}"], tmp_path / "eval")
        outcome = evaluate(cfg)
    assert outcome.status == "completed"
    # Lightning's request for the callbacks that wrote the checkpoint is not shown.
    assert not [w for w in caught if CHECKPOINT_CALLBACKS_NOTICE in str(w.message)]
    expected = read_metrics(run_dir)["best"]
    assert outcome.value["test/acc"] == pytest.approx(expected["test/acc"])
    assert outcome.value["test/loss"] == pytest.approx(expected["test/loss"], rel=1e-5)


def test_a_failing_body_is_recorded_not_raised(tmp_path):
    from research.run.fit import train

    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        missing = tmp_path / "missing.ckpt"
        cfg = _job_config("train", [*FAST, f"ckpt_path={missing}"], tmp_path / "run")
        outcome = train(cfg)
    assert outcome.status == "failed"
    assert "missing.ckpt" in read_metrics(tmp_path / "run")["error"]


def test_without_a_configured_checkpoint_no_checkpoint_is_written(tmp_path):
    """`callbacks.model_checkpoint=null` means no checkpoints: Lightning's default one stays off,
    and the test split is scored on the final weights."""
    from research.run.fit import train

    overrides = [*FAST, "callbacks.model_checkpoint=null", f"paths.log_dir={tmp_path}"]
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        outcome = train(_job_config("train", overrides, tmp_path / "run"))
    assert outcome.status == "completed"
    assert not list(tmp_path.rglob("*.ckpt"))
    saved = read_metrics(tmp_path / "run")
    assert "test/acc" in saved["final"] and "checkpoint" not in saved["best"]


def test_a_monitored_metric_nothing_logs_ends_the_run_before_it_trains(tmp_path):
    """Lightning's checkpoint finds it only after the first epoch's validation."""
    from research.run.fit import train

    overrides = [
        *FAST,
        "callbacks.model_checkpoint.monitor=val/acc_top5",
        f"paths.log_dir={tmp_path}",
    ]
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        outcome = train(_job_config("train", overrides, tmp_path / "run"))
    saved = read_metrics(tmp_path / "run")
    assert outcome.status == "failed" and saved["error"] == (
        "MonitoredMetricError: callbacks.model_checkpoint.monitor=val/acc_top5 is not a metric "
        "this run logs; its validation logs: val/acc, val/acc_best, val/acc_top3, val/loss"
    )
    assert not (tmp_path / "run" / "history.jsonl").read_text().strip(), "no epoch was trained"


@pytest.mark.parametrize("monitor", ["val/acc_best", "val/acc_top3"])
def test_every_metric_a_validation_logs_may_be_monitored(tmp_path, monitor: str):
    """val/acc_best moves only in training, yet the sanity check logs it too."""
    from research.run.fit import train

    overrides = [
        *FAST,
        f"callbacks.model_checkpoint.monitor={monitor}",
        f"paths.log_dir={tmp_path}",
    ]
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        outcome = train(_job_config("train", overrides, tmp_path / "run"))
    assert outcome.status == "completed"
    assert read_metrics(tmp_path / "run")["best"][monitor] > 0.5
