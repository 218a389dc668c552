"""Notices that tell the user nothing, kept off a run's console: Lightning's product tips and
restatements of the config, deprecation warnings raised inside Lightning about its own
dependencies, and its advice to launch with `srun`. The run's log file
(<run dir>/<task_name>.log) still has every logged line; real problems (warnings from our code
or the user's, errors) reach the console as before."""

from __future__ import annotations

import logging
import warnings

# Lightning's INFO lines that only advertise or repeat what the config says.
_LIGHTNING_NOTICES = (
    "💡 Tip:",
    "TPU available:",
    "HPU available:",
    "was configured so validation will run",
    "to estimate number of stepping batches",
    "Restoring states from the checkpoint path",
    "Loaded model weights from the checkpoint",
)


class QuietConsole(logging.Filter):
    """A logging filter for the console handler (conf/hydra/default.yaml names it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("lightning"):
            return True
        message = record.getMessage()
        return not any(notice in message for notice in _LIGHTNING_NOTICES)


# Lightning warns on any machine with SLURM's `srun` on PATH (a cluster's login node) that a run
# outside a SLURM job should be started with `srun`. research-train starts its own DDP ranks
# (research.launch.ranks) and reaches SLURM through `launcher=submitit_slurm`, so the advice never
# applies to it, and a user who follows it starts the run in a job of its own.
_SRUN_HINT = r"The `srun` command is available on your system but is not used"


def quiet_library_notices() -> None:
    """Ignore deprecation warnings raised inside Lightning (they concern its use of torch, and
    the user can do nothing about them) and its `srun` hint."""
    for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
        warnings.filterwarnings("ignore", category=category, module=r"lightning(\.|$)")
    warnings.filterwarnings("ignore", message=_SRUN_HINT)
