"""Checkpoint files: written whole or not at all, read without running code from them."""

from __future__ import annotations

import errno
import os
import pickle
from pathlib import Path

import pytest
import torch

from research.tracking import checkpoints
from research.tracking.checkpoints import (
    AsyncAtomicCheckpointIO,
    AtomicCheckpointIO,
    CheckpointError,
    CheckpointWriteError,
    read_checkpoint,
    training_takes_every_core,
)
from research.utils.atomic import remove_leftovers
from tests.helpers.filesystems import tiny_tmpfs
from tests.helpers.killed_writes import killed_mid_write


def _checkpoint(size: int = 4) -> dict:
    return {"state_dict": {"w": torch.arange(size, dtype=torch.float32)}, "epoch": 1}


def test_a_written_checkpoint_reads_back_and_leaves_no_temporary_file(tmp_path: Path):
    path = tmp_path / "checkpoints" / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint(_checkpoint(), path)
    assert torch.equal(read_checkpoint(path)["state_dict"]["w"], torch.arange(4.0))
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.ckpt"]


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path: Path):
    path = tmp_path / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint(_checkpoint(), path)
    with pytest.raises(Exception):  # noqa: B017 - torch cannot pickle a lambda
        AtomicCheckpointIO().save_checkpoint({"state_dict": {}, "bad": lambda: 0}, path)
    assert torch.equal(read_checkpoint(path)["state_dict"]["w"], torch.arange(4.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]


def test_a_full_disk_is_one_line_and_the_old_checkpoint_stays(tmp_path: Path):
    with tiny_tmpfs(tmp_path / "disk", "1m") as disk:
        path = disk / "last.ckpt"
        AtomicCheckpointIO().save_checkpoint(_checkpoint(), path)
        before = path.read_bytes()
        with pytest.raises(
            CheckpointWriteError, match=f"no space left on device while writing {path}"
        ):
            AtomicCheckpointIO().save_checkpoint(_checkpoint(1_000_000), path)
        assert path.read_bytes() == before
        assert [p.name for p in disk.iterdir()] == ["last.ckpt"]
        assert os.statvfs(disk).f_bfree > 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        (b"not a checkpoint", "is not a readable Lightning checkpoint"),
        ({"weights": 1}, "has no state_dict"),
    ],
)
def test_an_unreadable_checkpoint_is_one_line(tmp_path: Path, content, message):
    path = tmp_path / "x.ckpt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        torch.save(content, path)
    with pytest.raises(CheckpointError, match=message) as err:
        read_checkpoint(path)
    assert "\n" not in str(err.value)


def test_a_write_killed_midway_leaves_a_temporary_that_only_it_removes(tmp_path: Path):
    path = tmp_path / "checkpoints" / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint(_checkpoint(), path)
    leftover = killed_mid_write(path)
    assert leftover.name.startswith(".last.ckpt.") and leftover.name.endswith(".tmp")
    # A user's files, however alike, are not ours.
    users = [".last.ckpt.tmp", "last.ckpt.123.tmp", ".notes.tmp", ".last.ckpt.12a.tmp", "x.ckpt"]
    for name in users:
        (path.parent / name).write_text("mine")
    assert remove_leftovers(path.parent) == [leftover]
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([*users, "last.ckpt"])
    assert torch.equal(read_checkpoint(path)["state_dict"]["w"], torch.arange(4.0))


def test_an_async_write_happens_after_save_returns_and_holds_the_weights_of_that_moment(
    tmp_path: Path,
):
    writer, path = AsyncAtomicCheckpointIO(serialize_here=False), tmp_path / "last.ckpt"
    checkpoint = _checkpoint(4_000_000)
    writer.save_checkpoint(checkpoint, path)
    assert not path.exists()  # 16 MB still being serialized on the writer thread
    checkpoint["state_dict"]["w"].add_(1)  # the optimizer's in-place step, right after
    assert torch.equal(writer.load_checkpoint(path)["state_dict"]["w"][:3], torch.arange(3.0))
    writer.teardown()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]


# Where the checkpoint is serialized: on the writer thread (False) or before save returns (True).
BOTH = pytest.mark.parametrize("here", [False, True], ids=["serialized-by-writer", "here"])


def test_serialized_here_the_write_holds_the_weights_of_that_moment(tmp_path: Path):
    writer, path = AsyncAtomicCheckpointIO(serialize_here=True), tmp_path / "last.ckpt"
    checkpoint = _checkpoint(4_000_000)
    writer.save_checkpoint(checkpoint, path)
    checkpoint["state_dict"]["w"].add_(1)  # the optimizer's in-place step, right after
    assert torch.equal(writer.load_checkpoint(path)["state_dict"]["w"][:3], torch.arange(3.0))
    writer.teardown()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]


def test_serialized_here_an_unpicklable_checkpoint_fails_at_its_own_save(tmp_path: Path):
    writer = AsyncAtomicCheckpointIO(serialize_here=True)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        writer.save_checkpoint({**_checkpoint(), "hook": lambda: None}, tmp_path / "last.ckpt")
    writer.teardown()
    assert list(tmp_path.iterdir()) == []


def test_the_writer_serializes_only_where_training_leaves_a_core_free(
    monkeypatch: pytest.MonkeyPatch,
):
    on_cpu = {"state_dict": {"w": torch.zeros(2)}}
    elsewhere = {"state_dict": {"w": torch.zeros(2, device="meta")}}  # e.g. a GPU's weights
    threads = torch.get_num_threads()
    monkeypatch.setattr(checkpoints, "usable_cores", lambda: threads)
    assert training_takes_every_core(on_cpu)
    assert not training_takes_every_core(elsewhere)
    monkeypatch.setattr(checkpoints, "usable_cores", lambda: threads + 1)  # a core to spare
    assert not training_takes_every_core(on_cpu)


@BOTH
def test_a_removal_waits_for_the_write_it_follows(tmp_path: Path, here: bool):
    writer, path = AsyncAtomicCheckpointIO(serialize_here=here), tmp_path / "epoch=1.ckpt"
    writer.save_checkpoint(_checkpoint(1_000_000), path)
    writer.remove_checkpoint(path)
    writer.teardown()
    assert list(tmp_path.iterdir()) == []


@BOTH
def test_a_failed_async_write_is_one_line_at_the_next_save_or_at_teardown(
    tmp_path: Path, here: bool
):
    (tmp_path / "taken").write_text("a file where the checkpoint folder should be")
    bad, good = tmp_path / "taken" / "last.ckpt", tmp_path / "ok" / "last.ckpt"
    writer = AsyncAtomicCheckpointIO(max_pending=1, serialize_here=here)
    writer.save_checkpoint(_checkpoint(), bad)
    with pytest.raises(CheckpointWriteError, match=f"while writing {bad}$") as err:
        writer.save_checkpoint(_checkpoint(), good)
    assert "\n" not in str(err.value)
    writer.save_checkpoint(_checkpoint(), bad)
    with pytest.raises(CheckpointWriteError, match=f"while writing {bad}$"):
        writer.teardown()
    writer.teardown()  # raised once: a second teardown (Lightning's, after the error) is quiet
    assert not good.exists()


@BOTH
def test_an_async_write_keeps_tied_weights_one_tensor(tmp_path: Path, here: bool):
    shared = torch.randn(1000, 64)
    checkpoint = {"state_dict": {"embed.weight": shared, "head.weight": shared.detach()}}
    writer, path = AsyncAtomicCheckpointIO(serialize_here=here), tmp_path / "last.ckpt"
    writer.save_checkpoint(checkpoint, path)
    writer.teardown()
    saved = read_checkpoint(path)["state_dict"]
    assert saved["embed.weight"].data_ptr() == saved["head.weight"].data_ptr()
    assert path.stat().st_size < shared.numel() * 4 * 1.5  # one copy on disk, not two


@BOTH
def test_a_save_of_the_same_state_links_to_the_file_saved_just_before(tmp_path: Path, here: bool):
    writer = AsyncAtomicCheckpointIO(serialize_here=here)
    best, last = tmp_path / "best.ckpt", tmp_path / "last.ckpt"
    writer.save_checkpoint(_checkpoint(), str(best))
    with writer.same_state_as(str(best)):
        writer.save_checkpoint({"not": "written"}, str(last))
    writer.teardown()
    assert last.samefile(best)
    assert read_checkpoint(last)["epoch"] == 1


@BOTH
def test_a_save_of_the_same_state_as_an_older_file_is_a_plain_save(tmp_path: Path, here: bool):
    writer = AsyncAtomicCheckpointIO(serialize_here=here)
    first, second, last = (tmp_path / name for name in ("first.ckpt", "second.ckpt", "last.ckpt"))
    writer.save_checkpoint(_checkpoint(), str(first))
    writer.save_checkpoint(_checkpoint(2), str(second))
    with writer.same_state_as(str(first)):  # not the latest save: another came between
        writer.save_checkpoint(_checkpoint(3), str(last))
    writer.teardown()
    assert not last.samefile(first) and not last.samefile(second)
    assert read_checkpoint(last)["state_dict"]["w"].numel() == 3


def test_without_hard_links_the_same_state_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    def no_links(source: object, target: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")  # e.g. a FAT or network mount

    writer, best, last = AtomicCheckpointIO(), tmp_path / "best.ckpt", tmp_path / "last.ckpt"
    writer.save_checkpoint(_checkpoint(), best)
    monkeypatch.setattr(os, "link", no_links)
    writer.link_checkpoint(best, last)
    assert not last.samefile(best)
    assert last.read_bytes() == best.read_bytes()
    assert remove_leftovers(tmp_path) == []


def test_a_link_to_a_save_that_failed_leaves_last_as_it_was(tmp_path: Path):
    """The failed save leaves an older `best.ckpt` at its path, which `last.ckpt` (newer) must
    not become."""
    best, last = tmp_path / "best.ckpt", tmp_path / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint({**_checkpoint(), "epoch": 5}, best)
    AtomicCheckpointIO().save_checkpoint({**_checkpoint(), "epoch": 6}, last)
    writer = AsyncAtomicCheckpointIO(max_pending=3, serialize_here=False)
    unpicklable = {**_checkpoint(), "epoch": 7, "hook": lambda: None}
    with pytest.raises((pickle.PicklingError, AttributeError)):
        # 16 MB first, so the failing save has not run yet when the link is asked for.
        writer.save_checkpoint(_checkpoint(4_000_000), str(tmp_path / "other.ckpt"))
        writer.save_checkpoint(unpicklable, str(best))
        with writer.same_state_as(str(best)):
            writer.save_checkpoint({**_checkpoint(), "epoch": 7}, str(last))
        writer.teardown()
    writer.teardown()
    assert read_checkpoint(last)["epoch"] == 6
    assert read_checkpoint(best)["epoch"] == 5
