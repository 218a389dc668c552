"""A Hydra callback that counts how the jobs of a multirun ended and says so at the end.

It reads the jobs' metrics.json files rather than Hydra's in-process job returns, so it works for
launchers that run jobs in other processes (submitit) too. A job folder with no metrics.json was
killed before it could write one and counts as failed.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from research.tracking.run_dir import read_metrics
from research.utils.atomic import write_json_atomic

# Statuses of a job that ended as intended; a pruned search trial was stopped by its study's
# pruner on purpose.
FINISHED = ("completed", "pruned")


def summarize(sweep_dir: Path) -> dict[str, Any]:
    """Status counts over the job folders (those with a `.hydra/` folder) of a sweep dir."""
    jobs = sorted(p.parent for p in sweep_dir.glob("*/.hydra"))
    statuses = {job.name: (read_metrics(job) or {}).get("status", "failed") for job in jobs}
    counts = Counter(statuses.values())
    return {
        "jobs": len(jobs),
        "completed": counts.get("completed", 0),
        "failed": counts.get("failed", 0),
        "diverged": counts.get("diverged", 0),
        "pruned": counts.get("pruned", 0),
        "interrupted": counts.get("interrupted", 0),
        "not_completed": sorted(name for name, s in statuses.items() if s not in FINISHED),
    }


def failures(summary: dict[str, Any]) -> int:
    """Jobs that did not end as intended; a sweep in which every job was pruned counts as one
    failure too, since it has no result (no best trial) to show."""
    bad = int(summary["jobs"]) - int(summary["completed"]) - int(summary.get("pruned", 0))
    return bad or int(int(summary["jobs"]) > 0 and int(summary["completed"]) == 0)


def summary_line(summary: dict[str, Any], sweep_dir: Path) -> str:
    line = (
        f"sweep: {summary['completed']}/{summary['jobs']} jobs completed, "
        f"{summary['failed']} failed, {summary['diverged']} diverged"
        + (f", {summary['pruned']} pruned" if summary["pruned"] else "")
        + f" ({sweep_dir})"
    )
    if summary["pruned"] and not summary["completed"]:
        line += (
            "; every trial was pruned, so the search has no best value: loosen the pruner "
            "(hydra.sweeper.pruner.*) or pass hydra.sweeper.pruner.name=none"
        )
    return line


class SweepSummary(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        summary = summarize(sweep_dir)
        write_json_atomic(sweep_dir / "sweep_summary.json", summary)
        line = summary_line(summary, sweep_dir)
        print(line)  # once: the sweep's process logs to the console only


def record_stopped_sweep(
    sweep_dir: Path, not_started: list[str] | None, signal_name: str
) -> dict[str, Any]:
    """A multirun stopped by a signal: Hydra calls no end-of-sweep callback then, so the CLI
    records the counts, the signal and the jobs that never started (None when the sweeper
    decides its jobs as it goes), and says so in one line."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    summary = {**summarize(sweep_dir), "stopped_by": signal_name, "not_started": not_started}
    write_json_atomic(sweep_dir / "sweep_summary.json", summary)
    never = "an unknown number of" if not_started is None else str(len(not_started))
    print(
        f"sweep: stopped by {signal_name}; {summary['completed']}/{summary['jobs']} started jobs "
        f"completed, {summary['interrupted']} interrupted, {never} jobs never started "
        f"({sweep_dir / 'sweep_summary.json'})",
        file=sys.stderr,
    )
    return summary
