"""The training task: build everything a config names, fit, test the best checkpoint, record.

Failures are recorded by `research.run.job.run_job`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import lightning as L
from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig

from research import compat
from research.callbacks.checkpoint_state import ReanchorCheckpoints, RunIdentity
from research.callbacks.divergence import DivergenceGuard
from research.callbacks.epochs import EpochHistory, EpochSeed
from research.callbacks.last_checkpoint import split_last
from research.callbacks.monitored import MonitoredMetricCheck, monitored
from research.callbacks.placement import RankPlacement
from research.config.instantiate import instantiate_plain
from research.config.schemas.lightning import Trainer, is_model_checkpoint
from research.launch.ranks import node_ranks
from research.run.build import build_task
from research.run.job import JobOutcome, run_job
from research.run.job_settings import job_settings
from research.run.resume import check_fits, model_family, resolve_resume
from research.tracking.checkpoints import (
    AsyncAtomicCheckpointIO,
    CheckpointError,
    read_checkpoint,
)
from research.tracking.naming import run_name
from research.tracking.record import RunRecord
from research.tracking.run_dir import CHECKPOINT_DIR
from research.tracking.wandb_run import build_loggers, log_provenance, start_wandb_service
from research.utils.atomic import remove_leftovers

log = logging.getLogger(__name__)


def _validates_mid_epoch(trainer: dict[str, Any]) -> bool:
    """`val_check_interval` below 1.0 (a fraction of an epoch) or a number of steps."""
    interval = trainer.get("val_check_interval", 1.0)
    return isinstance(interval, int) or (isinstance(interval, float) and interval < 1.0)


def _callbacks(config: dict[str, Any], run_dir: Path, has_logger: bool) -> list[Callback]:
    """The configured callbacks; checkpoints go to the run dir, and the learning-rate monitor is
    left out when there is no logger to receive it (e.g. `debug=fdr`). When validation runs
    mid-epoch, checkpoints are saved after every validation, so the best one is not lost.
    `save_last` is a `LastCheckpoint` of its own, so `last.ckpt` follows every epoch."""
    built: list[Callback] = []
    mid_epoch = _validates_mid_epoch(config.get("trainer") or {})
    for node in (config.get("callbacks") or {}).values():
        if not node or not node.get("_target_"):
            continue
        if node["_target_"].endswith("LearningRateMonitor") and not has_logger:
            continue
        last = None
        if is_model_checkpoint(node):
            node = {**node, "dirpath": node.get("dirpath") or str(run_dir / CHECKPOINT_DIR)}
            if mid_epoch:
                node["save_on_train_epoch_end"] = False
            node, last = split_last(node)
        built.append(instantiate_plain(node))
        if last is not None:
            built.append(last)  # after the best-checkpoint callback: it saves after it
    return built


def _best_metrics(
    history: EpochHistory, checkpoint: ModelCheckpoint | None, run_dir: Path
) -> dict[str, Any]:
    """The logged metrics of the best checkpoint: its epoch row, or the (mid-epoch) validation it
    was saved at; the last epoch's row without a checkpoint."""
    rows = history.rows
    if checkpoint is None or checkpoint.best_model_score is None or not rows:
        return dict(rows[-1]) if rows else {}
    target = float(checkpoint.best_model_score)
    monitor = checkpoint.monitor or ""
    candidates = [*rows, *history.validations]
    row = min(candidates, key=lambda r: abs(r.get(monitor, float("inf")) - target))
    return {**row, "checkpoint": str(Path(checkpoint.best_model_path).relative_to(run_dir))}


def _plugins(trainer_cfg: dict[str, Any]) -> list[Any]:
    """The configured Trainer plugins (e.g. SLURMEnvironment) plus atomic checkpoint writes, off
    the training thread (the fit waits for the last one before it returns)."""
    configured = trainer_cfg.get("plugins") or []
    configured = configured if isinstance(configured, list) else [configured]
    return [*(instantiate_plain(p) for p in configured), AsyncAtomicCheckpointIO()]


def _resume_checkpoint(
    config: dict[str, Any], record: RunRecord
) -> tuple[Path | None, dict[str, Any]]:
    """The checkpoint this run continues from, and its contents. The run dir's own `last.ckpt`
    must be this run's (same run id): a run dir is one run."""
    run_dir = record.run_dir
    resume = resolve_resume(
        config.get("ckpt_path"), run_dir, Path(config["paths"]["log_dir"]), record.run_id
    )
    if resume is None:
        return None, {}
    checkpoint = read_checkpoint(resume)
    saved_id = (checkpoint.get("research") or {}).get("run_id")
    if resume.parent.parent == run_dir and saved_id and saved_id != record.run_id:
        raise CheckpointError(
            f"{resume} belongs to run {saved_id}, not to this config's run {record.run_id}; "
            "a run dir holds one run: start a new run dir or use that run's config"
        )
    return resume, checkpoint


def _remove_leftovers(run_dir: Path) -> None:
    """Temporaries of atomic writes (checkpoints, history) that a process killed mid-write left
    in this run dir: this job holds the run dir's lock, so no live writer owns them."""
    for folder in (run_dir, run_dir / CHECKPOINT_DIR):
        for leftover in remove_leftovers(folder):
            log.info("removed %s, left by a process killed while writing it", leftover)


def _fit(config: dict[str, Any], record: RunRecord, loggers: list[Logger]) -> Any:
    with job_settings(config["trainer"], record):
        return _fit_and_test(config, record, loggers)


def _fit_and_test(config: dict[str, Any], record: RunRecord, loggers: list[Logger]) -> Any:
    run_dir = record.run_dir
    if rank_zero_only.rank == 0:
        _remove_leftovers(run_dir)
    L.seed_everything(config["seed"], workers=True, verbose=False)
    resume, saved, resume_error = None, {}, None
    try:
        resume, saved = _resume_checkpoint(config, record)
    except CheckpointError as err:
        resume_error = err  # raised once the W&B run exists, so that run is marked failed
    meta = {**(saved.get("research") or {}), "epoch": int(saved.get("epoch", 0))}
    # W&B's service process starts while the data and model are built (docs: benchmarks,
    # "Start-up with W&B"); a build error is raised once the W&B run exists, so a job that
    # fails there still gets a W&B run, marked failed. A job that will raise its resume error
    # builds nothing.
    starting = start_wandb_service(config.get("logger"))
    build_error: Exception | None = None
    try:
        if resume_error is None:
            datamodule, module = build_task(config)
    except Exception as err:
        build_error = err
    if starting is not None:
        starting.join()
    name = run_name(config, record.overrides)
    built, wandb_id = build_loggers(config.get("logger"), run_dir, meta.get("wandb_run_id"), name)
    loggers.extend(built)
    record.fields.update(
        resumed_from=str(resume) if resume else None,
        wandb={"run_id": wandb_id, **_wandb_settings(config)},
    )
    log_provenance(loggers, config, record.provenance())
    if resume_error is not None:
        raise resume_error
    if build_error is not None:
        raise build_error
    family = model_family(config)
    if resume is not None:
        check_fits(resume, saved, module, family)
    del saved  # Lightning reads the file again; do not hold two copies
    carry = resume.parent.parent if resume and resume.parent.parent != run_dir else None
    history = EpochHistory(run_dir, carry, meta["epoch"] + 1 if resume else 0)
    configured = _callbacks(config, run_dir, bool(loggers))
    checkpoint = next((c for c in configured if isinstance(c, ModelCheckpoint)), None)
    own = [
        EpochSeed(config["seed"]),
        RankPlacement(record.fields),
        DivergenceGuard(),
        MonitoredMetricCheck(monitored(config.get("callbacks") or {})),
        RunIdentity(record.run_id, wandb_id, family),
        ReanchorCheckpoints(),
    ]
    callbacks = [*own, history, *configured]
    trainer: L.Trainer = instantiate_plain(
        # No configured checkpoint, no checkpoints: Lightning would add a default one.
        {
            **{k: v for k, v in config["trainer"].items() if k not in Trainer.applied_by_run},
            "plugins": None,
            "enable_checkpointing": checkpoint is not None,
        },
        callbacks=callbacks,
        logger=loggers or False,
        default_root_dir=str(run_dir),
        plugins=_plugins(config["trainer"]),
    )
    compat.lightning_skip_idle_batch_hooks(trainer.callbacks)  # Lightning's own too
    record.fields.update(
        monitor=checkpoint.monitor if checkpoint else None,
        mode=checkpoint.mode if checkpoint else None,
    )
    hydra_cfg = HydraConfig.get()
    with node_ranks(trainer, hydra_cfg.job.config_name, record.overrides, run_dir):
        if config.get("train", True):
            trainer.fit(module, datamodule=datamodule, ckpt_path=str(resume) if resume else None)
        best = _best_metrics(history, checkpoint, run_dir)
        final = dict(history.rows[-1]) if history.rows else {}
        for row in (best, final):
            row.pop("time_s", None)  # wall clock, not a result
        if config.get("test", True):
            # The configured callback's best file (`ckpt_path="best"` warns that `last.ckpt`'s
            # callback is a second ModelCheckpoint).
            best_path = checkpoint.best_model_path if checkpoint is not None else ""
            # Without training, the weights to test are the ones ckpt_path names.
            untrained = resume if resume is not None and not config.get("train", True) else None
            ckpt = best_path or (str(untrained) if untrained else None)
            results = trainer.test(module, datamodule=datamodule, ckpt_path=ckpt)
            tested = {k: v for result in results for k, v in result.items()}
            best.update(tested)
            final.update(tested)
    record.fields.update(best=best, final=final)
    score = checkpoint.best_model_score if checkpoint else None
    if score is None and checkpoint is not None and history.rows:
        score = history.rows[-1].get(checkpoint.monitor)  # no checkpoint scored: fast_dev_run
    return float(score) if score is not None else None


def _wandb_settings(config: dict[str, Any]) -> dict[str, Any]:
    wandb_cfg = (config.get("logger") or {}).get("wandb") or {}
    return {k: wandb_cfg.get(k) for k in ("project", "group", "job_type", "mode")}


def train(cfg: DictConfig) -> JobOutcome:
    """Hydra task of `research-train`; its value is the best monitored value (Optuna's
    objective)."""
    return run_job("research-train", cfg, _fit)
