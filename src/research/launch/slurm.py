"""What a job under SLURM needs to know about itself: is it being requeued or ended?

SLURM ends a job the same way for `scancel`, a time limit and `scontrol requeue` (preemption):
SIGTERM to every process of the job, SIGKILL after `KillWait`. Only a job that will not come back
should record a final status; a requeued one leaves that to its next attempt.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time


def job_id() -> str | None:
    """This process's SLURM job id (an array task has its own), or None outside SLURM."""
    return os.environ.get("SLURM_JOB_ID")


def display_id() -> str | None:
    """The id `squeue` shows: `<array>_<task>` for an array task, else the job id."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else job_id()


def ending(wait_s: float = 0.0) -> str | None:
    """How SLURM is ending this job: "requeued" (its restart count went up), "cancelled"
    (scancel), "timeout" (its time limit); None when it is not, or outside SLURM.

    A requeue shows in `scontrol` a moment after it was asked for (submitit asks, then exits
    this process at once), so a caller that knows the job is being stopped can `wait_s` for
    SLURM's answer to settle."""
    job = job_id()
    if job is None:
        return None
    deadline = time.monotonic() + wait_s
    # By its array name: the first task of an array has the array's own id as its job id, and
    # `scontrol show job <array id>` lists every task.
    command = ["scontrol", "show", "job", "-o", display_id() or job]
    attempt = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    while True:
        try:
            # Never past the deadline: SLURM kills a stopped job after its KillWait.
            limit = max(1.0, min(15.0, deadline - time.monotonic()))
            shown = subprocess.run(
                command, capture_output=True, text=True, timeout=limit, check=True
            ).stdout
        except (OSError, subprocess.SubprocessError):
            # No answer yet: while SLURM requeues or cancels the job it signals every process
            # of the job, the `scontrol` just started included. Ask again until the deadline.
            shown = ""
        found = ending_from(shown, job, attempt)
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.5)


def keep_from_requeue() -> None:
    """Tell SLURM this job's outcome is final: do not requeue it. A job whose run has recorded
    its end (a failed rank, a cancel) would otherwise be started again by SLURM when one of its
    nodes fails a moment later, and its sweep would wait for that node to come back. Best
    effort: a job SLURM no longer knows has nothing to requeue."""
    job = display_id()
    if job is None:
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["scontrol", "update", f"JobId={job}", "Requeue=0"],
            capture_output=True,
            timeout=15,
            check=False,
        )


def ending_from(shown: str, job: str, attempt: int) -> str | None:
    """`ending` read from `scontrol show job -o` output (one line per job, `Key=Value` fields)
    for job `job` on its attempt `attempt` (SLURM_RESTART_COUNT)."""
    line = next((ln for ln in shown.splitlines() if ln.startswith(f"JobId={job} ")), "")
    fields = dict(token.split("=", 1) for token in line.split() if "=" in token)
    state = fields.get("JobState", "")
    if int(fields.get("Restarts", "0")) > attempt or state in ("REQUEUED", "PREEMPTED"):
        return "requeued"
    if state == "TIMEOUT" or fields.get("Reason") == "TimeLimit":
        return "timeout"
    # While this process still runs, COMPLETING means SLURM is ending the job (scancel shows
    # CANCELLED only once every process is gone).
    return "cancelled" if state in ("CANCELLED", "COMPLETING") else None
