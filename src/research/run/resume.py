"""Which checkpoint a run continues from, and whether a checkpoint fits the model a config
builds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from research.tracking.checkpoints import CheckpointError, read_checkpoint
from research.tracking.run_dir import CHECKPOINT_DIR, find_resume_checkpoint


def model_family(config: dict[str, Any]) -> str:
    """The model a config builds, as its task and network class names, e.g.
    `ClassificationModule(CNN)`: what a checkpoint must come from to be loaded into it."""
    model = config.get("model") or {}
    task = str(model.get("_target_", "?")).rsplit(".", 1)[-1]
    net = (model.get("net") or {}).get("_target_")
    return f"{task}({str(net).rsplit('.', 1)[-1]})" if net else task


def check_fits(path: Path, checkpoint: dict[str, Any], module: nn.Module, family: str) -> None:
    """Refuse a checkpoint of another model in one line, naming both, or of the same model with
    other sizes, naming the first weight that differs and both shapes (torch would raise a
    multi-line list of missing, unexpected and mis-sized weights)."""
    saved = (checkpoint.get("research") or {}).get("model")
    if saved and saved != family:
        raise CheckpointError(
            f"checkpoint {path} holds a {saved} model; this config builds a {family}"
        )
    state, wanted = checkpoint.get("state_dict") or {}, module.state_dict()
    have, want = set(state), set(wanted)
    if have != want:
        raise CheckpointError(
            f"checkpoint {path} does not fit this config's {family}: {len(want - have)} of its "
            f"weights are missing (e.g. {min(want - have, default='-')}) and "
            f"{len(have - want)} are not in it (e.g. {min(have - want, default='-')}); "
            f"it comes from {saved or 'another model'}"
        )
    resized = [
        (name, list(state[name].shape), list(weight.shape))
        for name, weight in wanted.items()
        if getattr(state[name], "shape", weight.shape) != weight.shape
    ]
    if resized:
        (name, theirs, ours), others = resized[0], len(resized) - 1
        more = {0: "", 1: " (1 other weight differs too)"}.get(
            others, f" ({others} other weights differ too)"
        )
        raise CheckpointError(
            f"checkpoint {path} does not fit this config's {family}: {name} has shape {theirs} "
            f"in the checkpoint and {ours} in the model{more}; use the checkpoint with the "
            "config it was trained with"
        )


def resolve_resume(
    ckpt_path: str | None, run_dir: Path, log_root: Path, run_id: str
) -> Path | None:
    """`ckpt_path=last` finds this config's unfinished run; a path must exist. With null, a
    run dir that already holds `last.ckpt` is a requeued job (SLURM preemption through
    submitit, same output dir) and continues from it; a new run dir never has one."""
    if ckpt_path is None:
        own = run_dir / CHECKPOINT_DIR / "last.ckpt"
        return own if own.is_file() else None
    if ckpt_path == "last":
        found = find_resume_checkpoint(run_dir, log_root, run_id)
        if found is None:
            raise CheckpointError(
                f"ckpt_path=last: no unfinished run with run id {run_id} under {log_root}; "
                "start without ckpt_path or pass a .ckpt path"
            )
        return found
    path = Path(ckpt_path).expanduser()
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    return path.resolve()


@dataclass
class Resume:
    """Where a run continues from: a checkpoint (None: a fresh start), what it holds until the
    model was checked against it, and what it says of the run it comes from; or the error that
    finding it raised, which the job raises once its loggers exist (so its W&B run is marked
    failed too)."""

    path: Path | None = None
    contents: dict[str, Any] = field(default_factory=dict, repr=False)
    epoch: int = 0
    wandb_run_id: str | None = None
    error: CheckpointError | None = None


def resume_point(config: dict[str, Any], run_dir: Path, run_id: str) -> Resume:
    """The checkpoint the run `run_id` in `run_dir` continues from. The run dir's own
    `last.ckpt` must be this run's (same run id): a run dir is one run."""
    try:
        path = resolve_resume(
            config.get("ckpt_path"), run_dir, Path(config["paths"]["log_dir"]), run_id
        )
        if path is None:
            return Resume()
        contents = read_checkpoint(path)
        saved = contents.get("research") or {}
        saved_id = saved.get("run_id")
        if path.parent.parent == run_dir and saved_id and saved_id != run_id:
            raise CheckpointError(
                f"{path} belongs to run {saved_id}, not to this config's run {run_id}; "
                "a run dir holds one run: start a new run dir or use that run's config"
            )
    except CheckpointError as err:
        return Resume(error=err)
    return Resume(path, contents, int(contents.get("epoch", 0)), saved.get("wandb_run_id"))
