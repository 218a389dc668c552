"""What every job does around its real work: record its outcome, whatever happens.

Any exception ends the job with a metrics.json saying `failed` (or `diverged`) and one line on
stderr instead of a traceback (the traceback goes to the job's log file). Returning normally keeps
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
from omegaconf import DictConfig

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


def run_job(prog: str, cfg: DictConfig, body: Body) -> JobOutcome:
    """Resolve `cfg` once, run `body` in this job's run dir and write its metrics.json (rank
    zero only)."""
    _one_console()
    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    config = resolve(cfg)
    record = RunRecord(run_dir, config, list(hydra_cfg.overrides.task))
    is_zero = rank_zero_only.rank == 0
    if is_zero:
        record.mark_started()
    loggers: list[Logger] = []
    status, error, result = "completed", None, None
    try:
        result = body(config, record, loggers)
    except (Exception, KeyboardInterrupt) as err:  # noqa: BLE001 - every failure is recorded
        status = "diverged" if isinstance(err, DivergedError) else "failed"
        status = "pruned" if is_pruned(err) else status
        cause = innermost(err)
        error = (
            f"{type(cause).__name__}: {one_line(cause)}"
            if str(cause).strip()
            else type(cause).__name__
        )
        log.error("run %s: %s", status, error)
        log.debug("traceback of the %s run", status, exc_info=True)
        print(f"{prog}: {status}: {error} (run dir: {run_dir})", file=sys.stderr)
    finally:
        best = {f"best/{k}": v for k, v in record.fields.get("best", {}).items()}
        ok = status in FINISHED
        finish_loggers(loggers, 0 if ok else 1, {"status": status, **best})
    if is_zero:
        record.write(status, error)
    return JobOutcome(status, result)
