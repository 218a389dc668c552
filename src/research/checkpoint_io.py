"""Checkpoints written so that a crash, a kill or a full disk never costs the previous one.

Lightning writes a checkpoint over the old file in place (through an fsspec transaction, with no
fsync), so a crash at the wrong moment or a full disk can leave a `last.ckpt` that no longer
loads. Here the bytes go to a temporary file beside the target (same filesystem, so the rename
is atomic), are fsynced, and only then renamed over it; the folder is fsynced so the rename
itself survives a power cut. A full disk ends the run with one line naming the file; the old
checkpoint is untouched and the partial temporary file is removed.
"""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO


class CheckpointWriteError(RuntimeError):
    """A checkpoint could not be written; the previous file at that path is intact."""


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` by `data` all at once, or leave it as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with partial.open("wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError as err:
        partial.unlink(missing_ok=True)
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise CheckpointWriteError(f"no space left on device while writing {path}") from None
        raise CheckpointWriteError(f"{err.strerror or err} while writing {path}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's torch checkpoint IO with `write_atomic` for local paths."""

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        if storage_options is not None or "://" in str(path):
            super().save_checkpoint(checkpoint, path, storage_options)
            return
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        write_atomic(Path(path), buffer.getvalue())
