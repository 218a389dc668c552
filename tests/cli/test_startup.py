"""A command's heavy imports run without collections, and what they loaded is frozen, once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = """
import gc, json, sys
from research.cli.startup import imports_without_collections

def full_passes():
    return gc.get_stats()[2]["collections"]

seen = {}
before, frozen_before = full_passes(), gc.get_freeze_count()
with imports_without_collections():
    seen["off_inside"] = not gc.isenabled()
    # Enough long-lived objects that the collector would pass over them all on the way.
    keep = [[i] for i in range(2_000_000)]
seen["full_passes"] = full_passes() - before
seen["frozen"] = gc.get_freeze_count() - frozen_before
seen["on_after"] = gc.isenabled()
with imports_without_collections():  # a multirun's next job: nothing again
    seen["second_on_inside"] = gc.isenabled()
seen["second_frozen"] = gc.get_freeze_count() - frozen_before
print(json.dumps(seen))
"""

# The control's stand-in: a context manager that does nothing.
_NO_OP = (
    "import contextlib, research.cli.startup as s\n"
    "s.imports_without_collections = contextlib.nullcontext\n"
)


def _probe(setup: str = "") -> dict:
    done = subprocess.run(
        [sys.executable, "-c", setup + _PROBE], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_first_block_runs_without_collections_and_freezes_what_it_made():
    seen = _probe()
    assert seen["off_inside"] and seen["on_after"]
    assert seen["full_passes"] == 0
    assert seen["frozen"] >= 2_000_000


@pytest.mark.slow
def test_the_control_without_it_passes_over_the_same_objects():
    """The same allocations with the context manager doing nothing: full passes happen."""
    seen = _probe(_NO_OP)
    assert seen["full_passes"] > 0
    assert seen["frozen"] == 0


def test_later_blocks_leave_the_collector_alone():
    seen = _probe()
    assert seen["second_on_inside"]
    assert seen["second_frozen"] == seen["frozen"]  # no second freeze of a finished job's garbage


def test_a_collector_that_was_off_stays_off():
    seen = _probe("import gc\ngc.disable()\n")
    assert seen["off_inside"] and not seen["on_after"]
