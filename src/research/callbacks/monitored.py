"""The validation metrics a run's callbacks monitor, checked against what the sanity check's
validation logged, before the first training step.

Lightning's ModelCheckpoint finds a monitored key that nothing logs only at the end of the first
validation, after a whole epoch of training; an Optuna objective (the checkpoint's monitor) and
early stopping wait as long. The sanity check (`trainer.num_sanity_val_steps`, 2 by default)
validates a few batches first, and every `val/` metric a task logs is logged there too.
"""

from __future__ import annotations

from typing import Any

import lightning as L

# Metrics under this prefix come from validation, so the sanity check logs them all.
VALIDATION = "val/"


class MonitoredMetricError(ValueError):
    """A callback monitors a validation metric the run never logs."""


def monitored(callbacks: dict[str, Any]) -> dict[str, str]:
    """`callbacks.<name>.monitor` -> the validation metric it names, for each configured
    callback that monitors one."""
    return {
        f"callbacks.{name}.monitor": node["monitor"]
        for name, node in callbacks.items()
        if isinstance(node, dict)
        and isinstance(node.get("monitor"), str)
        and node["monitor"].startswith(VALIDATION)
    }


class MonitoredMetricCheck(L.Callback):
    """Ends the run after the sanity check when a monitored `val/` metric was not logged, naming
    the ones that were. Without a sanity check there is nothing to compare, and Lightning's own
    check at the first validation applies."""

    def __init__(self, monitors: dict[str, str]) -> None:
        self.monitors = monitors

    def on_sanity_check_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        logged = sorted(k for k in trainer.callback_metrics if k.startswith(VALIDATION))
        for where, metric in self.monitors.items():
            if metric not in logged:
                raise MonitoredMetricError(
                    f"{where}={metric} is not a metric this run logs; its validation logs: "
                    f"{', '.join(logged) or 'nothing'}"
                )
