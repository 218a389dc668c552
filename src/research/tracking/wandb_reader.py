"""Read what a W&B offline run logged, without network and without wandb's own services.

wandb 0.31 offline writes only `offline-run-*/run-<id>.wandb`: a record log in W&B's variant of
the LevelDB log format. The file opens with a 7-byte header (`:W&B`, magic 0xBEE1 as uint16 LE,
version byte 0) and is cut into 32 KiB blocks. Each chunk inside a block has a 7-byte header:
CRC32 (IEEE, seeded with the CRC of the type byte) as uint32 LE, payload length as uint16 LE,
and a type byte: FULL (1), or FIRST (2) / MIDDLE (3) / LAST (4) for a record split across
blocks. A block tail shorter than a chunk header is zero padding. Each reassembled record is a
`wandb_internal_pb2.Record` protobuf, decoded with the classes wandb ships.

A file cut short (a killed process) yields every record before the damage.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_FILE_HEADER = struct.Struct("<4sHB")
_CHUNK_HEADER = struct.Struct("<IHB")
_BLOCK = 32 * 1024
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


@dataclass
class OfflineRun:
    """The parts of an offline run that tests and reports read back."""

    path: Path
    run_id: str | None = None
    project: str | None = None
    group: str | None = None
    job_type: str | None = None
    tags: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int | None = None


def _chunks(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(type, payload) of every intact chunk, in order; stops at the first damaged one."""
    pos = _FILE_HEADER.size
    while pos + _CHUNK_HEADER.size <= len(data):
        room = _BLOCK - pos % _BLOCK
        if room < _CHUNK_HEADER.size:
            pos += room  # zero padding at the end of a block
            continue
        crc, length, kind = _CHUNK_HEADER.unpack_from(data, pos)
        start = pos + _CHUNK_HEADER.size
        payload = data[start : start + length]
        if kind == 0 and length == 0:
            pos += room  # zero-filled tail
            continue
        if len(payload) < length or zlib.crc32(payload, zlib.crc32(bytes([kind]))) != crc:
            return
        yield kind, payload
        pos = start + length


def read_records(path: Path) -> Iterator[Any]:
    """Every `Record` protobuf in a `.wandb` file, oldest first."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    if len(data) < _FILE_HEADER.size or _FILE_HEADER.unpack_from(data)[:2] != (b":W&B", 0xBEE1):
        raise ValueError(f"{path} is not a W&B run file (no ':W&B' header)")
    pending = b""
    for kind, payload in _chunks(data):
        if kind in (_FULL, _FIRST):
            pending = payload
        else:
            pending += payload
        if kind in (_FULL, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record
            pending = b""


def _set(target: dict[str, Any], item: Any) -> None:
    """Apply one config/summary/history item (`key` or `nested_key` path, JSON value)."""
    keys = list(item.nested_key) or [item.key]
    node = target
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = json.loads(item.value_json)


def _config(record: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in record.update:
        _set(values, item)
    # W&B stores each top-level key as {"value": ..., "desc": ...}.
    return {k: v.get("value", v) if isinstance(v, dict) else v for k, v in values.items()}


def find_offline_runs(folder: Path) -> list[Path]:
    """The `.wandb` files under `folder` (a run dir, a `wandb/` dir or an offline-run dir)."""
    return sorted(Path(folder).rglob("run-*.wandb"))


def read_offline_run(path: Path) -> OfflineRun:
    """Read a `.wandb` file, or the newest one under a folder."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; pass a .wandb file or a run dir")
    if path.is_dir():
        found = find_offline_runs(path)
        if not found:
            raise FileNotFoundError(f"no wandb/offline-run-*/run-*.wandb under {path}")
        path = max(found, key=lambda p: p.stat().st_mtime)
    run = OfflineRun(path=path)
    for record in read_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            r = record.run
            run.run_id, run.project, run.group = r.run_id, r.project, r.run_group or None
            run.job_type, run.tags = r.job_type or None, list(r.tags)
            run.config.update(_config(r.config))
        elif kind == "config":
            run.config.update(_config(record.config))
        elif kind == "history":
            row: dict[str, Any] = {}
            for item in record.history.item:
                _set(row, item)
            run.history.append(row)
        elif kind == "summary":
            for item in record.summary.update:
                _set(run.summary, item)
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    return run
