"""What every job does around its real work: record its outcome, whatever happens.

Any exception ends the job with a metrics.json saying `failed` (`diverged` for a NaN loss,
`pruned` when Optuna's pruner stopped it), a signal with `interrupted` and the line that resumes
it, and one line on stderr instead of a traceback (the traceback goes to the job's log file). A
job that SLURM requeued records nothing and leaves that to its next attempt. Returning normally
keeps the other jobs of a multirun going; the CLI turns the outcomes into the exit code.
"""

from __future__ import annotations

import logging
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig

from research.callbacks.divergence import DivergedError
from research.config.errors import innermost, one_line
from research.config.validate import resolve
from research.launch import slurm
from research.run.noise import quiet_library_notices
from research.run.signals import Interrupted, interruption
from research.run.summary import summary_line
from research.tracking.record import RunRecord
from research.tracking.run_dir import CHECKPOINT_DIR, METRICS_FILE
from research.tracking.run_lock import RunDirBusy, RunDirLock
from research.tracking.sweep_summary import FINISHED
from research.tracking.wandb_run import finish_loggers
from research.utils.atomic import write_json_atomic

log = logging.getLogger(__name__)

# How long a job stopped from outside waits for SLURM to say whether it is requeuing it.
SLURM_SETTLE_S = 10.0
# A job's real work: given the resolved config, its record and a list to put its loggers in.
Body = Callable[[dict[str, Any], RunRecord, list[Logger]], Any]


@dataclass
class JobOutcome:
    """How a job ended, and its value (the objective a sweeper such as Optuna reads)."""

    status: str
    value: Any = None
    interrupted: Interrupted | None = None

    @property
    def exit_code(self) -> int:
        """0 completed (or pruned), 128 + the signal when interrupted (130 Ctrl-C, 143
        SIGTERM), else 1."""
        if self.interrupted is not None:
            return self.interrupted.exit_code
        return 0 if self.status in FINISHED else 1


def _one_console() -> None:
    """`import lightning` adds its own console handler; with Hydra's handlers on the root
    logger every Lightning message would print twice."""
    if logging.getLogger().handlers:
        for handler in list(logging.getLogger("lightning").handlers):
            logging.getLogger("lightning").removeHandler(handler)


def _resume_hint(prog: str, run_dir: Path, overrides: list[str]) -> str:
    """What to type to continue an interrupted run (or, with no checkpoint yet, to redo it)."""
    kept = [o for o in overrides if not o.startswith("ckpt_path=")]
    if prog != "research-train":
        return f"rerun: {shlex.join([prog, *kept])}"
    if not (run_dir / CHECKPOINT_DIR / "last.ckpt").is_file():
        return f"no checkpoint was saved yet; start again: {shlex.join([prog, *kept])}"
    return f"resume with: {shlex.join([prog, *kept, 'ckpt_path=last'])}"


def _error(err: BaseException) -> str:
    if isinstance(err, SystemExit):
        return f"exited (SystemExit {err.code})"
    cause = innermost(err)
    name = type(cause).__name__
    return f"{name}: {one_line(cause)}" if str(cause).strip() else name


def _finish(loggers: list[Logger], outcome: JobOutcome, summary: dict[str, Any]) -> None:
    """Close the loggers; a failure here must not cost the job its metrics.json."""
    try:
        finish_loggers(loggers, outcome.exit_code, {"status": outcome.status, **summary})
    except Exception as err:  # noqa: BLE001 - e.g. W&B's service already ended by SIGTERM
        log.warning("the loggers could not finish: %s", one_line(err))


def _classify(prog: str, err: BaseException, record: RunRecord, outcome: JobOutcome) -> str:
    """Set the outcome's status from how the body ended; return the error to record. Under
    SLURM, SIGTERM reaches W&B's service too, so SLURM is asked first whether it is requeuing
    or ending the job: the error itself may only be a lost connection."""
    # A stop from outside (a signal, submitit's exit after it requeued the job) may be SLURM
    # acting: give its state a moment to show it.
    stopped = isinstance(err, SystemExit | KeyboardInterrupt)
    ended = slurm.ending(wait_s=SLURM_SETTLE_S if stopped else 0.0)
    if ended == "requeued":
        outcome.status = "requeued"
        return _error(err)
    if ended is not None:
        return f"{ended} by SLURM (job {slurm.display_id()}); {_error(err)}"
    outcome.interrupted = interruption(err)
    if outcome.interrupted is not None:
        outcome.status = "interrupted"
        record.fields["signal"] = outcome.interrupted.name
        return f"interrupted by {outcome.interrupted.name}"
    if isinstance(err, DivergedError):
        outcome.status = "diverged"
    elif _is_pruned(err):
        outcome.status = "pruned"
    return _error(err)


def _is_pruned(err: BaseException) -> bool:
    """True for Optuna's TrialPruned (its pruner stopped a search trial), without importing
    optuna where no search runs."""
    optuna = sys.modules.get("optuna")
    return optuna is not None and isinstance(err, optuna.TrialPruned)


def run_job(prog: str, cfg: DictConfig, body: Body) -> JobOutcome:
    """Resolve `cfg` once, run `body` in this job's run dir and write its metrics.json (rank
    zero only), however the job ends: an exception, a signal (`Interrupted`, or the SystemExit
    Lightning raises in its place) or a console's SystemExit.

    Under SLURM a requeued job raises SystemExit so that submitit waits for its next attempt,
    which resumes and records; a cancelled job returns normally, so the launcher still collects
    it and the rest of the sweep.
    """
    _one_console()
    quiet_library_notices()
    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    config = resolve(cfg)
    record = RunRecord(run_dir, config, list(hydra_cfg.overrides.task))
    is_zero = rank_zero_only.rank == 0
    lock = RunDirLock(run_dir)
    if is_zero:
        try:
            lock.acquire()  # a single run: the CLI already holds it (shared in this process)
        except RunDirBusy as err:
            print(f"{prog}: error: {err}", file=sys.stderr)
            return JobOutcome("failed")  # another process's run: leave its files alone
        record.mark_started()
    loggers: list[Logger] = []
    outcome = JobOutcome("failed")
    error = None
    try:
        outcome.value = body(config, record, loggers)
        outcome.status = "completed"
    except BaseException as err:  # noqa: BLE001 - every ending is recorded, signals included
        error = _classify(prog, err, record, outcome)
        log.debug("the %s run's traceback (%s)", outcome.status, error, exc_info=True)
    best = {f"best/{k}": v for k, v in record.fields.get("best", {}).items()}
    _finish(loggers, outcome, best)
    if outcome.status == "requeued":
        # Not an Exception: submitit writes no result, and waits for the next attempt.
        raise SystemExit(1)
    if is_zero:
        slurm.keep_from_requeue()
        payload = record.payload(outcome.status, error)
        try:
            write_json_atomic(run_dir / METRICS_FILE, payload)
        except OSError as err:
            print(
                f"{prog}: could not write {run_dir / METRICS_FILE}: {err.strerror}", file=sys.stderr
            )
        lock.release()
        hint = _resume_hint(prog, run_dir, record.overrides) if outcome.interrupted else None
        ok = outcome.status in FINISHED
        print(summary_line(prog, payload, hint), file=sys.stdout if ok else sys.stderr, flush=True)
    return outcome
