"""Read back what a W&B offline run logged, without network and without wandb's services.

wandb 0.31 offline writes only `wandb/offline-run-<time>-<id>/run-<id>.wandb` (no config.yaml,
no summary json). That file is W&B's variant of the LevelDB log format (facts from LevelDB's
`doc/log_format.md` and wandb's `core/pkg/leveldb/record.go`, a modified copy of golang/leveldb):

- a 7-byte file header: ident `:W&B`, magic 0xBEE1 (uint16 LE), format version 0 (one byte);
- the file, header included, is cut into 32 KiB blocks; a block tail shorter than a chunk
  header (7 bytes) is zero padding;
- each chunk: CRC32 (uint32 LE; IEEE polynomial, unmasked - W&B's change to LevelDB's CRC32C -
  over the type byte then the payload), payload length (uint16 LE), type byte, payload. Chunks
  never cross a block; a record that does not fit is split into FIRST (2), MIDDLE (3)... LAST (4)
  chunks, otherwise it is one FULL (1) chunk;
- each record is a serialized `wandb_internal_pb2.Record`, decoded with the protobuf classes the
  installed wandb ships (they define the content, so they are always in step with the writer).

Why our own framing code: since wandb moved its internals to the Go `wandb-core` binary, the
Python datastore module (`wandb.sdk.internal.datastore`) is no longer shipped, so there is no
importable reader; the framing is a small, documented, stable format, and parsing it here lets a
damaged file stop cleanly instead of raising.

W&B writes the log as the run goes, so a process killed mid-write leaves a file cut short: we read
every record before the first damaged or missing chunk, and say where with a RuntimeWarning.

W&B's service keeps an open run's records in a 32 KiB block in memory and writes them when the
block fills, every `x_transaction_log_flush_interval` seconds (0: never), and when it closes the
run; `run.finish()` returns once it has *asked* the service to close the run, so right after it
the file may still hold only its header. Such a file (no run record) is an error that says so,
never a run whose project, group and job type read as None: read after the service has stopped
(the writing process exited, or `wandb.teardown()` in that process).
"""

from __future__ import annotations

import json
import os
import struct
import warnings
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from research import compat

if TYPE_CHECKING:
    from wandb.proto.wandb_internal_pb2 import Record, RunRecord

_MAGIC = b":W&B" + struct.pack("<H", 0xBEE1)
_VERSION = 0
_FILE_HEADER = len(_MAGIC) + 1
_CHUNK = struct.Struct("<IHB")  # crc32, payload length, chunk type
_BLOCK = 32 * 1024
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_INTERNAL = "_wandb"  # W&B's own bookkeeping key in config and summary, not user data
_WHERE = "a run-<id>.wandb file, an offline-run-* folder or a folder holding wandb/offline-run-*"


@dataclass
class OfflineRun:
    """What one W&B run logged, as the `.wandb` file holds it (`path`)."""

    path: Path
    run_id: str | None = None
    project: str | None = None
    name: str | None = None  # display name; offline W&B assigns none unless one was given
    group: str | None = None
    job_type: str | None = None
    tags: list[str] = field(default_factory=list)
    notes: str | None = None
    started_at: datetime | None = None  # UTC
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)  # one row per step, with `_step`
    files: list[str] = field(default_factory=list)  # saved files, relative to the run's files/
    exit_code: int | None = None  # None: the run never finished (killed, still running, damaged)
    wandb_version: str | None = None  # of the wandb that wrote the file


class _Damage(Exception):
    """A chunk that cannot be read; the message says why."""


def _chunk(data: bytes, pos: int) -> tuple[int, bytes]:
    """(type, payload) of the chunk whose header starts at `pos`."""
    if len(data) - pos < _CHUNK.size:
        raise _Damage("cut short in a chunk header")
    crc, length, kind = _CHUNK.unpack_from(data, pos)
    if length > _BLOCK - pos % _BLOCK - _CHUNK.size or kind not in (_FULL, _FIRST, _MIDDLE, _LAST):
        raise _Damage("not a chunk header")
    payload = data[pos + _CHUNK.size : pos + _CHUNK.size + length]
    if len(payload) < length:
        raise _Damage("cut short in a chunk")
    if zlib.crc32(payload, zlib.crc32(bytes([kind]))) != crc:
        raise _Damage("checksum mismatch")
    return kind, payload


def _payloads(data: bytes, path: Path) -> Iterator[bytes]:
    """Each record's bytes, reassembled from its chunks; stops at the first bad chunk."""
    pos, parts = _FILE_HEADER, []
    try:
        if len(data) < _FILE_HEADER:
            raise _Damage("cut short in the file header")
        while pos < len(data):
            room = _BLOCK - pos % _BLOCK
            if room < _CHUNK.size:
                pos += room  # block trailer
                continue
            kind, payload = _chunk(data, pos)
            if (kind in (_FULL, _FIRST)) == bool(parts):
                raise _Damage("chunk out of order")
            parts.append(payload)
            if kind in (_FULL, _LAST):
                yield b"".join(parts)
                parts = []
            pos += _CHUNK.size + len(payload)
        if parts:
            raise _Damage("cut short in a record")
    except _Damage as damage:
        where = min(pos, len(data))
        message = f"{path}: {damage} at byte {where}; read the records before it"
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def read_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """Every `Record` protobuf in a `.wandb` file, oldest first (up to any damage)."""
    record_class = compat.wandb_record()
    path = Path(path)
    data = path.read_bytes()
    if not data.startswith(_MAGIC[: len(data)]):
        raise ValueError(f"{path} is not a W&B run file (it does not start with ':W&B')")
    if len(data) >= _FILE_HEADER and data[len(_MAGIC)] != _VERSION:
        raise ValueError(
            f"{path} is W&B log format version {data[len(_MAGIC)]}; this reader knows {_VERSION}"
        )
    for payload in _payloads(data, path):
        record = record_class()
        record.ParseFromString(payload)
        yield record


def _holder(target: dict[str, Any], keys: list[str], create: bool) -> dict[str, Any] | None:
    """The dict that holds the last of `keys` (a nested path), made on the way if `create`."""
    node = target
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            if not create:
                return None
            child = node[key] = {}
        node = child
    return node


def _update(target: dict[str, Any], items: Iterable[Any]) -> None:
    """Apply config/summary/history items: a `key` or `nested_key` path and a JSON value."""
    for item in items:
        keys = list(item.nested_key) or [item.key]
        _holder(target, keys, create=True)[keys[-1]] = json.loads(item.value_json)


def _remove(target: dict[str, Any], items: Iterable[Any]) -> None:
    for item in items:
        keys = list(item.nested_key) or [item.key]
        holder = _holder(target, keys, create=False)
        if holder is not None:
            holder.pop(keys[-1], None)


def _take_run(run: OfflineRun, record: RunRecord) -> None:
    """Each run record is a full snapshot (wandb re-sends it when tags, name or notes change)."""
    run.run_id = record.run_id or None
    run.project = record.project or None
    run.name = record.display_name or None
    run.group = record.run_group or None
    run.job_type = record.job_type or None
    run.tags = list(record.tags)
    run.notes = record.notes or None
    if record.HasField("start_time"):
        run.started_at = record.start_time.ToDatetime(tzinfo=timezone.utc)
    _update(run.config, record.config.update)
    _update(run.summary, record.summary.update)


def _age(path: Path) -> tuple[str, int]:
    """Sort key: the start time in the folder name (it survives copying), then the mtime."""
    parts = path.parent.name.split("-")
    stamp = parts[2] if path.parent.name.startswith("offline-run-") and len(parts) > 3 else ""
    return stamp, path.stat().st_mtime_ns


def find_offline_runs(folder: str | os.PathLike[str]) -> list[Path]:
    """The `run-<id>.wandb` files in `folder` (an offline-run-* folder, a `wandb/` folder or a
    folder holding `wandb/`), oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder; pass {_WHERE}")
    patterns = ("run-*.wandb", "offline-run-*/run-*.wandb", "wandb/offline-run-*/run-*.wandb")
    return sorted({found for pattern in patterns for found in folder.glob(pattern)}, key=_age)


def read_offline_run(path: str | os.PathLike[str]) -> OfflineRun:
    """Read a `.wandb` file, or the newest offline run in a folder (see `find_offline_runs`).
    A file W&B has not written a run record to yet raises ValueError (see the module's doc)."""
    path = Path(path)
    if path.is_dir():
        found = find_offline_runs(path)
        if not found:
            raise FileNotFoundError(f"no wandb/offline-run-*/run-<id>.wandb in {path}")
        path = found[-1]
    elif not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; pass {_WHERE}")
    run, started = OfflineRun(path=path), False
    for record in read_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "header":
            run.wandb_version = record.header.version_info.producer.split("+")[0] or None
        elif kind == "run":
            _take_run(run, record.run)
            started = True
        elif kind == "config":
            _update(run.config, record.config.update)
            _remove(run.config, record.config.remove)
        elif kind == "summary":
            _update(run.summary, record.summary.update)
            _remove(run.summary, record.summary.remove)
        elif kind == "history":
            row: dict[str, Any] = {}
            _update(row, record.history.item)
            run.history.append(row)
        elif kind == "files":
            run.files = list(dict.fromkeys([*run.files, *(f.path for f in record.files.files)]))
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    if not started:
        raise ValueError(
            f"{path} holds no run record yet ({path.stat().st_size} bytes): W&B has not written "
            "this run out (its service writes an open run when a 32 KiB block fills, on its "
            "flush interval and when it closes the run after finish); read it after the writing "
            "process exits, or after wandb.teardown() in that process"
        )
    run.config.pop(_INTERNAL, None)
    run.summary.pop(_INTERNAL, None)
    return run
