"""A command's exit status from how its jobs ended: 0 when each completed (or its search's pruner
stopped it), 1 when one did not, 128 + the signal when a signal stopped the command (a mistake
found by the pre-flight is 2, before anything ran)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from research.run.plan import Plan
from research.run.signals import Interrupted


def exit_status(plan: Plan, outcomes: list[Any]) -> int:
    """The status of a command whose jobs all ended (`outcomes`: the JobOutcome of each job
    that ran in this process)."""
    if not plan.runs:
        return 0
    if plan.sweep_dir is not None:
        return 1 if _sweep_failures(plan.sweep_dir) else 0
    return outcomes[0].exit_code if len(outcomes) == 1 else 1


def _sweep_failures(folder: Path) -> int:
    """Jobs of a finished multirun that did not complete, from its sweep_summary.json (written
    by the SweepSummary callback); a sweep that left no summary counts as failed."""
    from research.tracking.sweep_summary import failures

    try:
        # A pruned search trial was stopped on purpose by its study's pruner: not a failure.
        return failures(json.loads((folder / "sweep_summary.json").read_text()))
    except (OSError, ValueError, KeyError):
        return 1


def stopped(prog: str, stop: Interrupted, plan: Plan, started: list[int], any_ended: bool) -> int:
    """A signal ended the command: a sweep records which jobs never started (`started`: the
    numbers of those that did); the exit status is 128 + the signal (130 Ctrl-C, 143 SIGTERM,
    129 SIGHUP). Jobs handed to a launcher's own processes (SLURM's) go on without this
    command: say so, and how to stop them."""
    from research.tracking.sweep_summary import record_stopped_sweep

    if plan.sweep_dir is not None:
        never = None
        if plan.jobs is not None and plan.launcher is None:
            never = [" ".join(job) for i, job in enumerate(plan.jobs) if i not in started]
        record_stopped_sweep(plan.sweep_dir, never, stop.name)
        if plan.launcher is not None:
            print(_still_queued(plan.sweep_dir, plan.launcher), file=sys.stderr)
    elif not any_ended:
        print(f"{prog}: interrupted by {stop.name} before the run started", file=sys.stderr)
    return stop.exit_code


def _still_queued(multirun: Path, launcher: str) -> str:
    """Where the handed-off jobs are; for SLURM the job ids to cancel (submitit's folder per
    submission is named by its job id, `%j`). Local submitit jobs are child processes, which a
    Ctrl-C in the terminal reaches too: whether they go on is not known here."""
    folder = multirun / ".submitit"
    ids = sorted(p.name for p in folder.glob("*") if p.name.isdigit()) if folder.is_dir() else []
    if launcher == "submitit_slurm" and ids:
        return (
            f"sweep: its jobs were handed to {launcher} and go on without this command; "
            f"scancel {' '.join(ids)} stops them"
        )
    return f"sweep: its jobs were handed to {launcher}, whose job folders are under {folder}"
