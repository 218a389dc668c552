"""Putting a report's tables into W&B: one `report` run in the runs' own project and group.

W&B mode follows W&B's own rule (WANDB_MODE wins), else the mode the runs themselves logged in,
else offline; an offline run is left in `<out_dir>/wandb/` for `wandb sync`. The report run is a
run of its own (`reinit="create_new"`): wandb.init's default would instead return, and then
finish, a run the caller still has open. W&B's service writes the offline file out completely
when it stops, which research-report's process does at exit.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from research import compat
from research.reports.export import cells
from research.reports.runs import relative_run_dirs

if TYPE_CHECKING:
    from research.reports.report import Report


def _most_common(values: pd.Series) -> Any:
    counts = values.dropna().value_counts()
    return counts.index[0] if not counts.empty else None


def _table(frame: pd.DataFrame) -> Any:
    """A wandb.Table; pandas' missing values (NaN, <NA>) become None, which W&B accepts."""
    import wandb

    clean = frame.astype(object).where(frame.notna(), None)
    return wandb.Table(columns=[str(c) for c in clean.columns], data=clean.values.tolist())


def log_report(report: Report) -> str:
    """Log the per-variant table, the intervals of every cell and its difference to the
    baseline (the paper table's numbers: mean, interval, n, Δ, p, bold) and the per-run table;
    returns a line saying where they went."""
    import wandb

    runs = report.runs
    mode = os.environ.get("WANDB_MODE") or _most_common(runs["wandb.mode"]) or "offline"
    if mode == "disabled":
        return "wandb: mode is disabled; nothing logged"
    group = _most_common(runs["wandb.group"])
    compat.apply_patches("wandb")
    wandb.setup(settings=wandb.Settings(mode=mode))  # why: tracking.wandb_run, the session
    run = wandb.init(
        project=_most_common(runs["wandb.project"]) or "research",
        group=group,
        job_type="report",
        name=f"report-{group or Path(report.origin).name}",
        dir=str(report.out_dir),
        mode=mode,
        config={"source": report.origin, "metrics": report.metrics, "baseline": report.baseline},
        settings=wandb.Settings(silent=True),
        reinit="create_new",
    )
    where = run.url if mode == "online" else run.settings.sync_dir
    try:
        run.log(
            {
                "report": _table(report.table.reset_index()),
                "intervals": _table(cells(report)),
                "runs": _table(relative_run_dirs(runs, report.source)),
            }
        )
    except BaseException:
        run.finish(exit_code=1)  # marked failed, not left open to absorb later logging
        raise
    run.finish()
    if mode == "online":
        return f"wandb: report table logged to {where}"
    return f"wandb: {mode} run saved in {where}; upload it with: wandb sync {where}"
