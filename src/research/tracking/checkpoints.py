"""A run's checkpoint files: read without running code from them, written so that a crash, a kill
or a full disk never costs the previous one.

Lightning writes a checkpoint over the old file in place (through an fsspec transaction, with no
fsync), so a crash at the wrong moment or a full disk can leave a `last.ckpt` that no longer
loads; here every local checkpoint goes through `research.utils.atomic`. Reading uses
`torch.load(weights_only=True)`: a checkpoint copied from elsewhere could otherwise run any code.
"""

from __future__ import annotations

import errno
import io
import pickle
import re
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from research.utils.atomic import write_atomic


class CheckpointError(ValueError):
    """A checkpoint path that does not exist or is not a readable Lightning checkpoint."""


class CheckpointWriteError(RuntimeError):
    """A checkpoint could not be written; the previous file at that path is intact."""


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


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's torch checkpoint IO with atomic, durable writes for local paths. A full disk
    ends the run with one line naming the file; the old checkpoint is untouched."""

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        if storage_options is not None or "://" in str(path):
            super().save_checkpoint(checkpoint, path, storage_options)
            return
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        try:
            write_atomic(Path(path), buffer.getvalue())
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EDQUOT):
                raise CheckpointWriteError(
                    f"no space left on device while writing {path}"
                ) from None
            raise CheckpointWriteError(f"{err.strerror or err} while writing {path}") from None
