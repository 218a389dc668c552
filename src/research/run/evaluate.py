"""The evaluation task: re-test a finished run's checkpoint with that run's own saved config."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.loggers import Logger
from omegaconf import DictConfig

from research.config.instantiate import trusting
from research.config.saved_run import saved_run_config
from research.run.build import build_task
from research.run.job import JobOutcome, run_job
from research.run.job_settings import job_settings
from research.run.preflight import eval_checkpoint
from research.run.resume import check_fits, model_family
from research.tracking.checkpoints import read_checkpoint
from research.tracking.record import RunRecord

CHECKPOINT_CALLBACKS_NOTICE = "Be aware that when using `ckpt_path`, callbacks used to create"


def _evaluate(config: dict[str, Any], record: RunRecord, _: list[Logger]) -> Any:
    source = Path(config["run_dir"]).expanduser().resolve()
    train_config = saved_run_config(source, config.get("overrides") or [], config["trust_run_dir"])
    # The products run as the run trained them (TF32 or not), unless `overrides` says otherwise.
    with job_settings(train_config, record):
        return _test_checkpoint(config, record, source, train_config)


def _test_checkpoint(
    config: dict[str, Any], record: RunRecord, source: Path, train_config: dict[str, Any]
) -> dict[str, Any]:
    checkpoint = eval_checkpoint(source, config["ckpt"])
    saved = read_checkpoint(checkpoint)
    L.seed_everything(train_config["seed"], verbose=False)
    with trusting(train_config, config["trust_run_dir"]):
        datamodule, module = build_task(train_config)
    check_fits(checkpoint, saved, module, model_family(train_config))
    del saved
    saved_trainer = train_config["trainer"]
    trainer = L.Trainer(
        accelerator=saved_trainer["accelerator"],
        devices=1,
        precision=saved_trainer["precision"],
        limit_test_batches=saved_trainer.get("limit_test_batches"),
        limit_val_batches=saved_trainer.get("limit_val_batches"),
        logger=False,
        default_root_dir=str(record.run_dir),
        enable_progress_bar=False,
    )
    run = trainer.test if config["split"] == "test" else trainer.validate
    with warnings.catch_warnings():
        # Lightning asks for the callbacks that wrote the checkpoint (its best and last
        # checkpoints); they have nothing to do in a test, and the user nothing to change.
        warnings.filterwarnings("ignore", message=CHECKPOINT_CALLBACKS_NOTICE)
        results = run(module, datamodule=datamodule, ckpt_path=str(checkpoint))
    metrics = {k: v for result in results for k, v in result.items()}
    record.fields.update(
        source_run_dir=str(source),
        checkpoint=str(checkpoint),
        eval_overrides=list(config.get("overrides") or []),
        final=metrics,
    )
    return metrics


def evaluate(cfg: DictConfig) -> JobOutcome:
    """Hydra task of `research-eval`; writes the metrics to its own run dir's metrics.json."""
    return run_job("research-eval", cfg, _evaluate)
