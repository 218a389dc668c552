"""Files and folders that appear whole or not at all: a crash, a kill or a full disk never leaves a
half-written one where a reader (a resume, a report, the next run) would take it for whole.

The bytes go to a temporary name beside the target (same filesystem, so the rename is atomic),
are fsynced, and only then renamed over it; the folder is fsynced so the rename itself survives a
power cut. A process killed mid-write leaves its temporary behind; `remove_leftovers` clears
them when the folder's owner comes back (a resumed run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# `.<target name>.<pid>.tmp`: the temporary name of `replacing`, and what a leftover looks like.
_PARTIAL_NAME = re.compile(r"\..+\.[0-9]+\.tmp")


def _partial(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def remove_leftovers(folder: Path) -> list[Path]:
    """Remove the temporaries that `replacing` left in `folder` (not below it) when its process
    was killed mid-write (SIGKILL, a power cut: its clean-up never ran); return them.

    Only names `replacing` makes are touched, never another file. A live writer's temporary has
    the same kind of name, so the caller must own `folder` (e.g. hold its run dir's lock)."""
    if not folder.is_dir():
        return []
    leftovers = sorted(p for p in folder.iterdir() if _PARTIAL_NAME.fullmatch(p.name))
    for leftover in leftovers:
        _remove(leftover)
    return leftovers


def _fsync(path: Path) -> None:
    """Flush a file's or a folder's entry to disk (folders: so a rename in them is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def replacing(path: str | os.PathLike[str], durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write a file (or build a folder) in; when the
    block ends without an error it takes `path`'s place at once, otherwise it is removed.

    A folder is published only if `path` does not exist yet: when another process built the same
    folder first, ours is discarded (the two are the same build). `durable` fsyncs the file and
    its folder, so the new contents survive a power cut."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = _partial(path)
    try:
        yield partial
        if partial.is_dir():
            try:
                os.rename(partial, path)
            except OSError:  # another process published the same folder first
                _remove(partial)
        else:
            if durable:
                _fsync(partial)
            os.replace(partial, path)
        if durable:
            _fsync(path.parent)
    except BaseException:
        _remove(partial)
        raise


def write_atomic(path: str | os.PathLike[str], data: bytes | str, durable: bool = True) -> None:
    """Replace `path` by `data` all at once, or leave it as it was."""
    with replacing(path, durable) as partial:
        if isinstance(data, str):
            partial.write_text(data, encoding="utf-8")
        else:
            partial.write_bytes(data)


def link_atomic(
    source: str | os.PathLike[str], path: str | os.PathLike[str], durable: bool = True
) -> None:
    """Make `path` a second name of `source`'s file (a hard link), replacing what was at `path`
    all at once, without copying a byte. Replacing `source` later (as `replacing` does: a new
    file) leaves `path` as it was. Where the filesystem has no hard links, a copy."""
    with replacing(path, durable) as partial:
        try:
            os.link(source, partial)
        except OSError:
            shutil.copyfile(source, partial)


def write_json_atomic(path: str | os.PathLike[str], payload: Any, durable: bool = True) -> None:
    """A JSON file (indented, non-JSON values as their str) written with `write_atomic`."""
    write_atomic(path, json.dumps(payload, indent=2, default=str) + "\n", durable)
