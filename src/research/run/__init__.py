"""One job: a resolved config built into a datamodule and a task, fitted or evaluated, and recorded
in its run dir however it ends (metrics.json, checkpoints, signals)."""
