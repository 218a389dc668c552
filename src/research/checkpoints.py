"""Reading Lightning checkpoints safely, and deciding which one a run resumes from."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from research.tracking.run_dir import CHECKPOINT_DIR, find_resume_checkpoint


class CheckpointError(ValueError):
    """A checkpoint path that does not exist or is not a readable Lightning checkpoint."""


def read_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint without unpickling arbitrary objects (`weights_only=True`)."""
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unreadable file gets one line
        message = str(err)
        refused = "Weights only load failed" in message and "Unsupported operand" not in message
        if isinstance(err, pickle.UnpicklingError) and refused:
            raise CheckpointError(_refused(path, message)) from None
        # torch's own first line advises turning the safety check off; give what it found.
        message = message.split("WeightsUnpickler error:", 1)[-1]
        reason = message.strip().splitlines()[0] if message.strip() else type(err).__name__
        raise CheckpointError(
            f"checkpoint {path} is not a readable Lightning checkpoint ({reason[:160]})"
        ) from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise CheckpointError(f"checkpoint {path} has no state_dict; it is not a Lightning .ckpt")
    return checkpoint


def _refused(path: Path, message: str) -> str:
    """Why torch refused to unpickle a file, without torch's advice to turn the check off:
    unpickling a file from elsewhere can run any code."""
    found = re.search(r"GLOBAL ([\w.]+)", message)
    what = f"the object {found.group(1)}" if found else "objects other than tensors and plain data"
    return (
        f"checkpoint {path} was refused: it holds {what}, and loading it would run code from "
        "the file; use checkpoints written by research-train (or re-save yours as a plain "
        "state_dict from code you trust)"
    )


def model_family(config: dict[str, Any]) -> str:
    """The model a config builds, as its task and network class names, e.g.
    `ClassificationModule(CNN)`: what a checkpoint must come from to be loaded into it."""
    model = config.get("model") or {}
    task = str(model.get("_target_", "?")).rsplit(".", 1)[-1]
    net = (model.get("net") or {}).get("_target_")
    return f"{task}({str(net).rsplit('.', 1)[-1]})" if net else task


def check_fits(path: Path, checkpoint: dict[str, Any], module: nn.Module, family: str) -> None:
    """Refuse a checkpoint of another model in one line, naming both (Lightning would report a
    truncated list of missing and unexpected keys)."""
    saved = (checkpoint.get("research") or {}).get("model")
    if saved and saved != family:
        raise CheckpointError(
            f"checkpoint {path} holds a {saved} model; this config builds a {family}"
        )
    have, want = set(checkpoint.get("state_dict") or {}), set(module.state_dict())
    if have != want:
        raise CheckpointError(
            f"checkpoint {path} does not fit this config's {family}: {len(want - have)} of its "
            f"weights are missing (e.g. {min(want - have, default='-')}) and "
            f"{len(have - want)} are not in it (e.g. {min(have - want, default='-')}); "
            f"it comes from {saved or 'another model'}"
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
