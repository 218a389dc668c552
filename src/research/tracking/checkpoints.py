"""A run's checkpoint files: read without running code from them, written so that a crash, a kill
or a full disk never costs the previous one.

Lightning writes a checkpoint over the old file in place (through an fsspec transaction, with no
fsync), so a crash at the wrong moment or a full disk can leave a `last.ckpt` that no longer
loads; here every local checkpoint goes through `research.utils.atomic`, on a writer thread so that
training does not wait for the disk (`AsyncAtomicCheckpointIO`). Reading uses
`torch.load(weights_only=True)`: a checkpoint copied from elsewhere could otherwise run any code.
"""

from __future__ import annotations

import errno
import io
import pickle
import re
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch.plugins.io import TorchCheckpointIO
from lightning_utilities.core.apply_func import apply_to_collection

from research.config.devices import usable_cores
from research.utils.atomic import link_atomic, write_atomic


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
        self.write_serialized(serialize(checkpoint), path)

    def write_serialized(self, data: bytes, path: Any) -> None:
        """Write a checkpoint that `serialize` turned into bytes (a local path)."""
        with _write_errors(path):
            write_atomic(Path(path), data)

    def link_checkpoint(self, source: Any, path: Any) -> None:
        """`path` becomes the file `source` is (a hard link), atomically and durably."""
        with _write_errors(path):
            link_atomic(Path(source), Path(path))


def serialize(checkpoint: dict[str, Any]) -> bytes:
    """The checkpoint as the bytes `torch.save` writes: a copy of its state at this moment."""
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    return buffer.getvalue()


def training_takes_every_core(checkpoint: dict[str, Any]) -> bool:
    """Whether this run trains on the CPU with a torch thread on every core it may use, so that a
    writer thread serializing checkpoints would share a core with training. An intra-op parallel
    op then waits for its slowest thread: at 6 training steps an epoch of a 2.5 MB checkpoint
    (`overhead.py`'s `256-wide`) the median step took 2.7 ms longer (30.6 ms against 27.8 ms
    without checkpoints, two cores)."""
    weights = checkpoint.get("state_dict") or {}
    on_cpu = all(t.device.type == "cpu" for t in weights.values() if isinstance(t, torch.Tensor))
    return on_cpu and torch.get_num_threads() >= usable_cores()


@contextmanager
def _write_errors(path: Any) -> Iterator[None]:
    """An OSError while writing `path` as one line naming it (a full disk said as such)."""
    try:
        yield
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise CheckpointWriteError(f"no space left on device while writing {path}") from None
        raise CheckpointWriteError(f"{err.strerror or err} while writing {path}") from None


def _link_once_written(
    writer: AtomicCheckpointIO, written: Future[None], source: str, path: Any
) -> None:
    """Link `path` to `source` if `source`'s own write succeeded (it ran before this, on the same
    thread). After a failed write `source` is an older checkpoint, which `path` must not become:
    `path` is left as it was, and the failure is raised as `source`'s, once."""
    if written.exception() is None:
        writer.link_checkpoint(source, path)


def _snapshot(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """CPU copies of the checkpoint's tensors, taken now: the training thread updates the weights
    in place once save returns, and a copy on the accelerator would hold its memory until the
    write ends. Tensors that are one (a tied embedding and output head) stay one copy, so the
    file is no larger than a synchronous save's."""
    copies: dict[tuple[Any, ...], torch.Tensor] = {}

    def copy(tensor: torch.Tensor) -> torch.Tensor:
        key = (tensor.device, tensor.data_ptr(), tensor.dtype, tensor.shape, tensor.stride())
        if key not in copies:
            copies[key] = tensor.detach().to("cpu", copy=True)
        return copies[key]

    return apply_to_collection(checkpoint, torch.Tensor, copy)


class AsyncAtomicCheckpointIO(CheckpointIO):
    """`AtomicCheckpointIO` on a writer thread, so training goes on while a checkpoint is
    serialized, written and fsynced.

    The training thread only copies the checkpoint's tensors to CPU, or, where training on the
    CPU already keeps every core busy (`serialize_here` None decides by
    `training_takes_every_core` at the first save), serializes them: the writer thread then
    only writes and fsyncs, which is mostly waiting on the disk. Writes and removals run one
    at a time in the order they were asked for (a removal never overtakes the write of the same
    file); at most `max_pending` wait, so a slow disk slows training instead of piling up copies.
    A failed write raises its `CheckpointWriteError` at the next save, or at `teardown`, which
    Lightning calls at the end of every fit/test (and after a failure): it waits for the last
    write, so a run is recorded finished only once its checkpoints are on disk. Lightning's
    `AsyncCheckpointIO` also copies first, but removes files on the caller thread (a removal can
    overtake the write it should follow), queues without bound and re-raises an error forever.
    """

    def __init__(self, max_pending: int = 2, serialize_here: bool | None = None) -> None:
        self.writer = AtomicCheckpointIO()
        self.max_pending = max_pending
        self.serialize_here = serialize_here
        self._executor: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        self._last_saved: tuple[str, Future[None]] | None = None  # the latest save's path and job
        self._same_as: str | None = None  # see `same_state_as`

    @contextmanager
    def same_state_as(self, source: str) -> Iterator[None]:
        """A save inside this block holds the same training state as `source`, the file this
        writer saved last: it becomes a hard link to that file once that file is written, with
        no second serialization and write (and stays as it was if that write failed). Where
        `source` is not that file (another save came between, or it went elsewhere, e.g. a
        sharded folder), the save is a plain one."""
        self._same_as = source
        try:
            yield
        finally:
            self._same_as = None

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        source, last = self._same_as, self._last_saved
        local = storage_options is None and "://" not in f"{path} {source}"
        if local and self.serialize_here is None:
            self.serialize_here = training_takes_every_core(checkpoint)
        if local and last is not None and source == last[0]:
            self._submit(_link_once_written, self.writer, last[1], source, path)
        elif local and self.serialize_here:
            self._submit(self.writer.write_serialized, serialize(checkpoint), path)
        else:
            snapshot = _snapshot(checkpoint)
            self._submit(self.writer.save_checkpoint, snapshot, path, storage_options)
        self._last_saved = (str(path), self._pending[-1])

    def remove_checkpoint(self, path: Any) -> None:
        self._submit(self.writer.remove_checkpoint, path)

    def load_checkpoint(self, path: Any, **options: Any) -> dict[str, Any]:
        self.wait()  # the file may be one this run is still writing (e.g. the best to test)
        return self.writer.load_checkpoint(path, **options)

    def _submit(self, task: Callable[..., None], *args: Any) -> None:
        """Queue `task` behind the earlier ones; first raise the error of any that failed."""
        while self._pending and (self._pending[0].done() or len(self._pending) >= self.max_pending):
            self._pending.popleft().result()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="checkpoint-writer")
        self._pending.append(self._executor.submit(task, *args))

    def wait(self) -> None:
        """Block until every queued write and removal is done; raise the first failure (once)."""
        while self._pending:
            self._pending.popleft().result()

    def teardown(self) -> None:
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)  # after a failure: the rest still finish
                self._executor = None
            self._pending.clear()
