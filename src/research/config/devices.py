"""Refuse device counts and strategies that cannot work here, before torch loads.

DDP on CPU starts one process per device, each with its own copy of torch, the data and the
model: `trainer.devices=99` on a 2-core machine swaps the machine to a halt instead of training.
Lightning's spawned or forked ranks (`ddp_spawn`, `ddp_fork`, `ddp_notebook`) train, but rank
zero's callbacks run in a child process, so the run's history, best metrics and the Optuna
objective never reach the job; `strategy=ddp` starts the ranks per job
(`research.launch.ranks`) instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from research.config.errors import ConfigError

# More processes than this many per core only slow a run down.
PROCESSES_PER_CORE = 2
# Strategies whose rank zero is a child process (and their `_find_unused_parameters_*` forms).
CHILD_PROCESS_STRATEGIES = ("ddp_spawn", "ddp_fork", "ddp_notebook")


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. a SLURM or container limit)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def process_limit(cores: int) -> int:
    """The most processes of one kind (ranks, loader workers) a machine with `cores` runs well."""
    return max(2, PROCESSES_PER_CORE * cores)


def _has_accelerator() -> bool:
    """Whether `accelerator: auto` may pick a GPU (NVIDIA or ROCm device files, Apple MPS)."""
    dev = Path("/dev")
    return sys.platform == "darwin" or (dev / "kfd").exists() or any(dev.glob("nvidia[0-9]*"))


def _count(devices: Any) -> int | None:
    """A device count given as a number (`-1`, `auto` and device lists are Lightning's to check)."""
    if isinstance(devices, bool):
        return None
    if isinstance(devices, int):
        return devices
    if isinstance(devices, str) and devices.strip().isdigit():
        return int(devices)
    return None


def check_devices(trainer: dict[str, Any]) -> None:
    """Raise a one-line ConfigError when a CPU run asks for far more processes than cores."""
    accelerator = str(trainer.get("accelerator", "auto")).lower()
    if accelerator not in ("cpu", "auto") or (accelerator == "auto" and _has_accelerator()):
        return
    count = _count(trainer.get("devices"))
    cores = usable_cores()
    limit = process_limit(cores)
    if count is not None and count > limit:
        raise ConfigError(
            f"trainer.devices={count} on CPU starts {count} processes but this machine has "
            f"{cores} usable cores; use trainer.devices between 1 and {limit}, or a GPU "
            "(trainer=gpu / trainer=ddp)"
        )


def check_strategy(trainer: dict[str, Any]) -> None:
    """Raise a one-line ConfigError for a strategy whose results would stay in a child process."""
    strategy = trainer.get("strategy")
    if isinstance(strategy, str) and strategy.startswith(CHILD_PROCESS_STRATEGIES):
        raise ConfigError(
            f"trainer.strategy={strategy} trains in child processes whose history, best "
            "metrics and search objective never reach the run; use trainer.strategy=ddp "
            "(trainer=ddp or ddp_sim), which starts the ranks per job, sweeps included"
        )
