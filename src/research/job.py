"""What every job does around its real work: record its outcome, whatever happens.

Any exception or interrupt ends the job with a metrics.json saying `failed` (or `diverged`, or
`pruned` when Optuna stopped it) and one line on stderr instead of a traceback (the traceback goes
to the job's log file); a job that SLURM requeued records nothing and leaves that to its next
attempt. Returning normally keeps
the other jobs of a multirun going; the CLI turns the returned statuses into the exit code.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities import rank_zero_only
from lightning.pytorch.utilities.exceptions import SIGTERMException
from omegaconf import DictConfig

from research import slurm
from research.callbacks import DivergedError
from research.config.errors import innermost, one_line
from research.config.validate import resolve
from research.pruning import is_pruned
from research.tracking.record import RunRecord
from research.tracking.sweep_summary import FINISHED
from research.tracking.wandb_run import finish_loggers

log = logging.getLogger(__name__)

# A job's real work: given the resolved config, its record and a list to put its loggers in.
Body = Callable[[dict[str, Any], RunRecord, list[Logger]], Any]


@dataclass
class JobOutcome:
    """How a job ended, and its value (the objective a sweeper such as Optuna reads)."""

    status: str
    value: Any = None


def _one_console() -> None:
    """`import lightning` adds its own console handler; with Hydra's handlers on the root
    logger every Lightning message would print twice."""
    if logging.getLogger().handlers:
        for handler in list(logging.getLogger("lightning").handlers):
            logging.getLogger("lightning").removeHandler(handler)


def _describe(err: BaseException) -> str:
    if isinstance(err, SIGTERMException):
        return "SIGTERMException: the job received SIGTERM (scancel, a time limit or a shutdown)"
    if isinstance(err, SystemExit):
        return f"interrupted (SystemExit {err.code})"
    cause = innermost(err)
    text = one_line(cause) if str(cause).strip() else ""
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


def _finish(loggers: list[Logger], status: str, summary: dict[str, Any]) -> None:
    """Close the loggers; a failure here must not cost the job its metrics.json."""
    try:
        finish_loggers(loggers, 0 if status in FINISHED else 1, {"status": status, **summary})
    except Exception as err:  # noqa: BLE001 - e.g. W&B's service already ended by SIGTERM
        log.warning("the loggers could not finish: %s", one_line(err))


def run_job(prog: str, cfg: DictConfig, body: Body) -> JobOutcome:
    """Resolve `cfg` once, run `body` in this job's run dir and write its metrics.json (rank
    zero only).

    An interrupted job (SystemExit: Lightning's SIGTERM, submitit's exit after requeuing, Ctrl-C)
    records `failed` too, unless SLURM has requeued it: then its next attempt resumes and records,
    and the exit goes on so submitit waits for that attempt. Under SLURM a cancelled job returns
    normally, so the launcher still collects it and the rest of the sweep.
    """
    _one_console()
    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    config = resolve(cfg)
    record = RunRecord(run_dir, config, list(hydra_cfg.overrides.task))
    is_zero = rank_zero_only.rank == 0
    if is_zero:
        record.mark_started()
    loggers: list[Logger] = []
    status, error, result, interrupt = "failed", None, None, None
    try:
        result = body(config, record, loggers)
        status = "completed"
    except (Exception, KeyboardInterrupt, SystemExit) as err:  # noqa: BLE001 - all are recorded
        interrupt = err if isinstance(err, SystemExit) else None
        # Under SLURM, SIGTERM reaches W&B's service too: the error may be its lost connection.
        ended = slurm.ending()
        error = _describe(err)
        if ended == "requeued":
            status = "requeued"
        elif ended is not None:
            error = f"{ended} by SLURM (job {slurm.display_id()}); {error}"
        elif isinstance(err, DivergedError):
            status = "diverged"
        elif is_pruned(err):
            status = "pruned"
        log.error("run %s: %s", status, error)
        log.debug("traceback of the %s run", status, exc_info=True)
        if status != "requeued":
            print(f"{prog}: {status}: {error} (run dir: {run_dir})", file=sys.stderr)
    _finish(loggers, status, {f"best/{k}": v for k, v in record.fields.get("best", {}).items()})
    if status == "requeued":
        # Not an Exception: submitit writes no result, and waits for the next attempt.
        raise SystemExit(1)
    if is_zero:
        record.write(status, error)
    if interrupt is not None and slurm.job_id() is None:
        raise interrupt
    return JobOutcome(status, result)
