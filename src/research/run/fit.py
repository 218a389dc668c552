"""The training task, in named phases: resume? -> build (data, model, loss, optimizer) ->
loggers -> callbacks (in `CALLBACK_ORDER`) -> Trainer -> fit -> test best -> record.

Failures are recorded by `research.run.job.run_job`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
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
from research.config.schemas.lightning import is_model_checkpoint
from research.launch.ranks import node_ranks
from research.run.build import build_task
from research.run.job import JobOutcome, run_job
from research.run.job_settings import job_settings
from research.run.resume import Resume, check_fits, model_family, resume_point
from research.tracking.checkpoints import AsyncAtomicCheckpointIO
from research.tracking.naming import run_name
from research.tracking.record import RunRecord
from research.tracking.run_dir import CHECKPOINT_DIR
from research.tracking.wandb_run import build_loggers, log_provenance, start_wandb_service
from research.utils.atomic import remove_leftovers

log = logging.getLogger(__name__)

# The callbacks of every training run, in the order Lightning calls them: the run's own, the epoch
# history, then the configured ones (conf/callbacks/), where each best-checkpoint callback is
# followed by its `last.ckpt` one, which saves after it. Lightning moves ModelCheckpoints after
# all others, keeping their order.
CALLBACK_ORDER = (
    "epoch_seed",
    "rank_placement",
    "divergence_guard",
    "monitored_metric_check",
    "run_identity",
    "reanchor_checkpoints",
    "epoch_history",
    "configured",
)


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


def _callbacks_in_order(
    config: dict[str, Any],
    record: RunRecord,
    history: EpochHistory,
    wandb_id: str | None,
    has_logger: bool,
) -> list[Callback]:
    """Every callback of the run, in `CALLBACK_ORDER`."""
    named: dict[str, list[Callback]] = {
        "epoch_seed": [EpochSeed(config["seed"])],
        "rank_placement": [RankPlacement(record.fields)],
        "divergence_guard": [DivergenceGuard()],
        "monitored_metric_check": [MonitoredMetricCheck(monitored(config.get("callbacks") or {}))],
        "run_identity": [RunIdentity(record.run_id, wandb_id, model_family(config))],
        "reanchor_checkpoints": [ReanchorCheckpoints()],
        "epoch_history": [history],
        "configured": _callbacks(config, record.run_dir, has_logger),
    }
    assert named.keys() == set(CALLBACK_ORDER)
    return [callback for name in CALLBACK_ORDER for callback in named[name]]


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


def _remove_leftovers(run_dir: Path) -> None:
    """Temporaries of atomic writes (checkpoints, history) that a process killed mid-write left
    in this run dir: this job holds the run dir's lock, so no live writer owns them."""
    for folder in (run_dir, run_dir / CHECKPOINT_DIR):
        for leftover in remove_leftovers(folder):
            log.info("removed %s, left by a process killed while writing it", leftover)


@dataclass
class _Built:
    """What the build phase made, or the error it raised (raised once the loggers exist)."""

    datamodule: Any = None
    module: Any = None
    error: Exception | None = None


def _build(config: dict[str, Any], resume: Resume) -> _Built:
    """The datamodule and task (run/build.py: data, model, loss, optimizer), built while W&B's
    service process starts (docs: benchmarks, "Start-up with W&B"). A job that will raise its
    resume error builds nothing."""
    starting = start_wandb_service(config.get("logger"))
    built = _Built()
    try:
        if resume.error is None:
            built.datamodule, built.module = build_task(config)
    except Exception as err:
        built.error = err
    if starting is not None:
        starting.join()
    return built


def _loggers(
    config: dict[str, Any], record: RunRecord, resume: Resume, loggers: list[Logger]
) -> str | None:
    """Add the configured loggers to `loggers` (the job closes them however it ends), continuing
    the resumed run's W&B run, and log the run's provenance; the W&B run id."""
    name = run_name(config, record.overrides)
    built, wandb_id = build_loggers(config.get("logger"), record.run_dir, resume.wandb_run_id, name)
    loggers.extend(built)
    record.fields.update(
        resumed_from=str(resume.path) if resume.path else None,
        wandb={"run_id": wandb_id, **_wandb_settings(config)},
    )
    log_provenance(loggers, config, record.provenance())
    return wandb_id


def _history(run_dir: Path, resume: Resume) -> EpochHistory:
    """The epoch history, continued after the resumed epoch with the rows of the run dir the
    checkpoint comes from."""
    if resume.path is None:
        return EpochHistory(run_dir, None, 0)
    source = resume.path.parent.parent
    return EpochHistory(run_dir, source if source != run_dir else None, resume.epoch + 1)


def _trainer(
    config: dict[str, Any],
    run_dir: Path,
    callbacks: list[Callback],
    loggers: list[Logger],
    checkpoint: ModelCheckpoint | None,
) -> L.Trainer:
    """Lightning's Trainer of the configured `trainer` node, with the run's callbacks, loggers
    and plugins."""
    trainer: L.Trainer = instantiate_plain(
        # No configured checkpoint, no checkpoints: Lightning would add a default one.
        {
            **config["trainer"],
            "plugins": None,
            "enable_checkpointing": checkpoint is not None,
        },
        callbacks=callbacks,
        logger=loggers or False,
        default_root_dir=str(run_dir),
        plugins=_plugins(config["trainer"]),
    )
    compat.apply_patches("trainer", trainer.callbacks)  # Lightning's own callbacks too
    return trainer


def _test_best(
    config: dict[str, Any],
    trainer: L.Trainer,
    built: _Built,
    resume: Resume,
    checkpoint: ModelCheckpoint | None,
) -> dict[str, Any]:
    """Test the best checkpoint (without training, the weights `ckpt_path` names); its test
    metrics, or nothing when the config turns testing off."""
    if not config.get("test", True):
        return {}
    # The configured callback's best file (`ckpt_path="best"` warns that `last.ckpt`'s
    # callback is a second ModelCheckpoint).
    best_path = checkpoint.best_model_path if checkpoint is not None else ""
    untrained = resume.path if resume.path is not None and not config.get("train", True) else None
    ckpt = best_path or (str(untrained) if untrained else None)
    results = trainer.test(built.module, datamodule=built.datamodule, ckpt_path=ckpt)
    return {k: v for result in results for k, v in result.items()}


def _fitted(
    history: EpochHistory, checkpoint: ModelCheckpoint | None, run_dir: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The logged metrics of the best checkpoint and of the last epoch, once the fit ended."""
    best = _best_metrics(history, checkpoint, run_dir)
    final = dict(history.rows[-1]) if history.rows else {}
    for row in (best, final):
        row.pop("time_s", None)  # wall clock, not a result
    return best, final


def _record(
    record: RunRecord,
    results: dict[str, dict[str, Any]],
    history: EpochHistory,
    checkpoint: ModelCheckpoint | None,
) -> float | None:
    """Record the `best` and `final` metrics; the best monitored value (Optuna's objective)."""
    record.fields.update(results)
    score = checkpoint.best_model_score if checkpoint else None
    if score is None and checkpoint is not None and history.rows:
        score = history.rows[-1].get(checkpoint.monitor)  # no checkpoint scored: fast_dev_run
    return float(score) if score is not None else None


def _fit(config: dict[str, Any], record: RunRecord, loggers: list[Logger]) -> Any:
    with job_settings(config, record):
        return _fit_and_test(config, record, loggers)


def _fit_and_test(config: dict[str, Any], record: RunRecord, loggers: list[Logger]) -> float | None:
    """The phases of one training run, in order. An error of the first two is raised once the
    loggers exist, so a job that fails there still gets a W&B run, marked failed."""
    run_dir = record.run_dir
    if rank_zero_only.rank == 0:
        _remove_leftovers(run_dir)
    L.seed_everything(config["seed"], workers=True, verbose=False)
    resume = resume_point(config, run_dir, record.run_id)
    built = _build(config, resume)
    wandb_id = _loggers(config, record, resume, loggers)
    for error in (resume.error, built.error):
        if error is not None:
            raise error
    if resume.path is not None:
        check_fits(resume.path, resume.contents, built.module, model_family(config))
    resume.contents = {}  # Lightning reads the file again; do not hold two copies
    history = _history(run_dir, resume)
    callbacks = _callbacks_in_order(config, record, history, wandb_id, bool(loggers))
    checkpoint = next((c for c in callbacks if isinstance(c, ModelCheckpoint)), None)
    trainer = _trainer(config, run_dir, callbacks, loggers, checkpoint)
    record.fields.update(
        monitor=checkpoint.monitor if checkpoint else None,
        mode=checkpoint.mode if checkpoint else None,
    )
    with node_ranks(trainer, HydraConfig.get().job.config_name, record.overrides, run_dir):
        if config.get("train", True):
            ckpt_path = str(resume.path) if resume.path else None
            trainer.fit(built.module, datamodule=built.datamodule, ckpt_path=ckpt_path)
        best, final = _fitted(history, checkpoint, run_dir)
        tested = _test_best(config, trainer, built, resume, checkpoint)
    results = {"best": {**best, **tested}, "final": {**final, **tested}}
    return _record(record, results, history, checkpoint)


def _wandb_settings(config: dict[str, Any]) -> dict[str, Any]:
    wandb_cfg = (config.get("logger") or {}).get("wandb") or {}
    return {k: wandb_cfg.get(k) for k in ("project", "group", "job_type", "mode")}


def train(cfg: DictConfig) -> JobOutcome:
    """Hydra task of `research-train`; its value is the best monitored value (Optuna's
    objective)."""
    return run_job("research-train", cfg, _fit)
