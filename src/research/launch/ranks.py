"""The other DDP ranks of a job on this node, started by the job itself.

Lightning's subprocess launcher starts ranks > 0 by re-running `sys.argv` (Lightning issue 11300):
inside a multirun that re-runs the whole sweep (`-m`, the Optuna study) in every rank, and under
submitit it re-runs submitit's own entry point. Here each rank runs exactly this job instead: the
job's own overrides, its run dir, no sweep. Lightning sees `LOCAL_RANK` set and treats the ranks
as launched externally, which its `LightningEnvironment` documents.

A rank dies with the process that started it (Linux `PR_SET_PDEATHSIG`): a killed job leaves no
rank behind waiting for a rendezvous that will never come.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from research import compat
from research.config.names import quoted
from research.utils.process import die_with

# Set in a rank's environment: the pid of the job that started it.
PARENT_ENV = "RESEARCH_RANK_PARENT"
_RANK_VARS = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "LOCAL_RANK", "WORLD_SIZE")


def _launches_ranks_itself(trainer: Any) -> bool:
    """True when Lightning would start this node's other ranks by re-running the command line."""
    from lightning.fabric.plugins.environments import LightningEnvironment

    strategy = trainer.strategy
    environment = getattr(strategy, "cluster_environment", None)
    return (
        compat.lightning_reruns_command_line(strategy)
        and isinstance(environment, LightningEnvironment)
        and not environment.creates_processes_externally
        and strategy.num_processes > 1
    )


def rank_command(config_name: str, overrides: list[str], run_dir: Path, rank: int) -> list[str]:
    """The command of one rank: this job's overrides in this job's run dir, its own log file."""
    return [
        sys.executable,
        "-m",
        "research.cli",
        config_name,
        *overrides,
        f"hydra.run.dir={quoted(run_dir)}",
        "hydra.output_subdir=null",
        f"hydra.job.name={config_name}_rank{rank}",
    ]


@contextlib.contextmanager
def node_ranks(
    trainer: Any, config_name: str, overrides: list[str], run_dir: Path
) -> Iterator[None]:
    """Start ranks 1..n-1 of this node for `trainer` (if it needs them), and end them with the job.

    On success the ranks finish on their own (they run the same fit and test); when the job
    fails, they are killed instead of waiting out the collective timeout.
    """
    if not _launches_ranks_itself(trainer):
        yield
        return
    strategy = trainer.strategy
    environment = strategy.cluster_environment
    saved = {name: os.environ.get(name) for name in _RANK_VARS}
    os.environ.update(
        MASTER_ADDR=environment.main_address,
        MASTER_PORT=str(environment.main_port),
        NODE_RANK=str(environment.node_rank()),
        LOCAL_RANK="0",
        WORLD_SIZE=str(strategy.num_processes * strategy.num_nodes),
    )
    procs = [
        subprocess.Popen(
            rank_command(config_name, overrides, run_dir, rank),
            env={**os.environ, "LOCAL_RANK": str(rank), PARENT_ENV: str(os.getpid())},
        )
        for rank in range(1, strategy.num_processes)
    ]
    completed = False
    try:
        yield
        completed = True
    finally:
        _end(procs, wait_s=120.0 if completed else 0.0)
        _leave_process_group()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _end(procs: list[subprocess.Popen], wait_s: float) -> None:
    """Let the ranks exit within `wait_s` seconds, then kill what is left."""
    deadline = time.monotonic() + wait_s
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _leave_process_group() -> None:
    """The next job of this process (a multirun) must form its own group, not reuse this one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def die_with_parent() -> None:
    """In a rank started by `node_ranks`: be killed when the job that started it dies."""
    parent = os.environ.get(PARENT_ENV)
    if parent:
        die_with(int(parent))
