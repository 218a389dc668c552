"""The experiment loggers of a run, and the W&B bookkeeping Lightning leaves out.

Lightning's WandbLogger never finishes its run, so in a multirun every job would log into the
first job's run; `finish_loggers` closes it with the job's exit code. W&B cannot resume an offline
run (wandb issue 2423): a resumed offline run reuses the run id in a new `offline-run-*` folder,
and `wandb sync --append` uploads it onto the same online run.
"""

from __future__ import annotations

import contextlib
import secrets
import string
import threading
from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import Logger, WandbLogger
from lightning.pytorch.utilities import rank_zero_only

from research import compat
from research.config.instantiate import instantiate_plain
from research.tracking.wandb_logger import WandbLogger as SameStepWandbLogger


def _new_wandb_id() -> str:
    """8 lowercase letters/digits, the shape of the ids W&B generates itself."""
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


def _is_wandb(cfg: Any) -> bool:
    return bool(cfg) and str(cfg.get("_target_") or "").endswith("WandbLogger")


def start_wandb_service(logger_cfg: dict[str, Any] | None) -> threading.Thread | None:
    """Start W&B's service process on a thread, so the job builds its data and model while it
    starts: about 0.2 s here, nearly all of it waiting for that process, with next to no work in
    this one (wandb.init, later, connects to it). If the start fails, wandb.init starts it again
    and reports why. None where this process starts no W&B run: no W&B logger, W&B disabled,
    or a rank other than zero."""
    configured = [cfg for cfg in (logger_cfg or {}).values() if _is_wandb(cfg)]
    mode = configured[0].get("mode") if configured else None
    if not configured or mode == "disabled" or rank_zero_only.rank != 0:
        return None
    import wandb  # here, not on the thread: importing is this process's work, it cannot overlap

    # The session in the run's mode: W&B decides from the session's mode, not the run's,
    # whether to send its own usage telemetry. An online session under an offline run builds
    # OpenTelemetry exporters (0.05-0.33 s at the run's first log, two threads) that try to
    # reach W&B's servers.
    settings = wandb.Settings(mode=mode) if mode else None

    def start() -> None:
        with contextlib.suppress(Exception):  # wandb.init retries the start and raises
            wandb.setup(settings=settings)

    thread = threading.Thread(target=start, name="wandb-service-start", daemon=True)
    thread.start()
    return thread


def build_loggers(
    logger_cfg: dict[str, Any] | None,
    run_dir: Path,
    wandb_id: str | None,
    name: str | None = None,
) -> tuple[list[Logger], str | None]:
    """Instantiate the configured loggers, all writing under `run_dir`; return the W&B id.
    A W&B run without a configured name gets `name` (tracking.naming.run_name)."""
    loggers: list[Logger] = []
    used_id = None
    for cfg in (logger_cfg or {}).values():
        if not cfg or not cfg.get("_target_"):
            continue
        extra: dict[str, Any] = {"save_dir": str(run_dir)}
        if _is_wandb(cfg):
            compat.apply_patches("wandb")
            used_id = cfg.get("id") or wandb_id or _new_wandb_id()
            extra.update(id=used_id, resume="allow" if wandb_id else None)
            if not cfg.get("name") and name:
                extra["name"] = name
        logger = instantiate_plain({**cfg, **extra})
        if isinstance(logger, WandbLogger):
            compat.apply_patches("wandb_logger", logger)
        loggers.append(logger)
    return loggers, used_id


def log_provenance(loggers: list[Logger], config: dict[str, Any], extra: dict[str, Any]) -> None:
    """Resolved config at the top level (so W&B can filter on `optimizer.lr`) plus overrides,
    git state and versions; the other loggers get the same as hyperparameters. Rank zero only:
    on other ranks Lightning hands out a dummy experiment."""
    if rank_zero_only.rank != 0:
        return
    for logger in loggers:
        if isinstance(logger, WandbLogger):
            logger.experiment.config.update({**config, **extra}, allow_val_change=True)
        else:
            logger.log_hyperparams({**config, **extra})


def finish_loggers(loggers: list[Logger], exit_code: int, summary: dict[str, Any]) -> None:
    """Close every logger; a W&B run gets `summary` (e.g. the best checkpoint's metrics) and is
    marked failed when `exit_code` is non-zero."""
    if rank_zero_only.rank != 0:
        return
    for logger in loggers:
        if isinstance(logger, WandbLogger):
            if compat.wandb_logger_started(logger):  # only finish a run that started
                if isinstance(logger, SameStepWandbLogger):
                    logger.flush()
                logger.experiment.summary.update(summary)
                logger.experiment.finish(exit_code=exit_code)
        else:
            logger.finalize("success" if exit_code == 0 else "failed")
