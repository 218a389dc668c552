"""Reading Lightning checkpoints safely, and deciding which one a run resumes from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from research.tracking.run_dir import CHECKPOINT_DIR, find_resume_checkpoint


class CheckpointError(ValueError):
    """A checkpoint path that does not exist or is not a readable Lightning checkpoint."""


def read_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint without unpickling arbitrary objects (`weights_only=True`)."""
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same message
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(
            f"checkpoint {path} is not a readable Lightning checkpoint ({reason[:160]})"
        ) from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise CheckpointError(f"checkpoint {path} has no state_dict; it is not a Lightning .ckpt")
    return checkpoint


def checkpoint_meta(path: Path) -> dict[str, Any]:
    """The run and W&B ids and the epoch a checkpoint was written at."""
    checkpoint = read_checkpoint(path)
    meta = dict(checkpoint.get("research") or {})
    meta["epoch"] = int(checkpoint.get("epoch", 0))
    return meta


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
    read_checkpoint(path)
    return path.resolve()
