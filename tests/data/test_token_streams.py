"""The on-disk token streams: smallest integer type, memory-mapped reads, all-or-nothing builds."""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from research.data.token_streams import read_streams, token_dtype, write_streams
from research.data.tokenizer import byte_level_bpe

TEXTS = {
    "train": [f"def f{i}(x):\n    return x * {i}\n" for i in range(200)],
    "val": ["print('held out')\n"],
    "test": ["", "x = 1\n"],
}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - tokenizers.Tokenizer
    return byte_level_bpe(tmp_path_factory.mktemp("t") / "tokenizer.json", TEXTS["train"], 300)


def test_smallest_type_that_holds_the_vocabulary():
    assert [token_dtype(n).str for n in (300, 65536, 65537, 200_000)] == [
        "<u2",
        "<u2",
        "<u4",
        "<u4",
    ]


def test_streams_are_each_split_encoded_with_an_end_after_every_document(tmp_path, tokenizer):
    written = write_streams(tmp_path, tokenizer, {k: iter(v) for k, v in TEXTS.items()}, 1)
    streams = read_streams(tmp_path)
    assert streams is not None and list(streams) == ["train", "val", "test"]
    for split, texts in TEXTS.items():
        expected = [i for text in texts for i in [*tokenizer.encode(text).ids, 1]]
        assert streams[split][:].tolist() == written[split][:].tolist() == expected
        view = streams[split][:]
        assert view.dtype == "<u2" and not view.flags.owndata and not view.flags.writeable
    assert (tmp_path / "tokens.bin").stat().st_size == 2 * sum(len(s) for s in streams.values())
    state = pickle.loads(pickle.dumps(streams["train"]))
    assert state._array is None and state[:5].tolist() == streams["train"][:5].tolist()


def test_a_failed_build_leaves_nothing_that_looks_complete(tmp_path, tokenizer):
    def failing():
        yield "x = 1\n"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_streams(tmp_path, tokenizer, {"train": iter(TEXTS["train"]), "val": failing()}, 1)
    assert read_streams(tmp_path) is None and list(tmp_path.iterdir()) == []


# Builds streams with the val split's documents SIGKILLing the process mid-build.
_KILLED_BUILD = """
import os, signal, sys
from pathlib import Path
from research.data.token_streams import write_streams
from research.data.tokenizer import byte_level_bpe

def killed():
    yield "x = 1"
    os.kill(os.getpid(), signal.SIGKILL)

folder = Path(sys.argv[1])
tokenizer = byte_level_bpe(folder / "tokenizer.json", ["def f(x): return x"] * 50, 300)
write_streams(folder, tokenizer, {"train": iter(["a = 1"] * 1000), "val": killed()}, 1)
"""


def test_a_killed_build_is_not_taken_for_complete(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-c", _KILLED_BUILD, str(tmp_path)], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert read_streams(tmp_path) is None and not (tmp_path / "tokens.bin").exists()
    assert [p.name for p in tmp_path.glob(".tokens.bin.*.tmp")]  # only the temporary is left
