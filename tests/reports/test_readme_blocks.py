"""Derived README blocks: replaced in place, and a README out of step with its renderer is an
error rather than a silent partial update."""

from __future__ import annotations

from pathlib import Path

import pytest

from research.reports.errors import ReportError
from research.reports.readme_blocks import read_blocks, replace_blocks, sync_readme

README = """# Study

Text before.

<!-- derived: table -->
| a | b |
|---|---|
| 1 | 2 |
<!-- /derived: table -->

Prose between.

<!-- derived: claims -->
old
<!-- /derived: claims -->
"""


def test_blocks_are_read_by_name():
    assert read_blocks(README) == {"table": "| a | b |\n|---|---|\n| 1 | 2 |\n", "claims": "old\n"}


def test_replacing_keeps_the_prose_and_changes_only_the_bodies():
    text = replace_blocks(README, {"table": "| a |\n|---|\n| 3 |", "claims": "new"})
    assert read_blocks(text) == {"table": "| a |\n|---|\n| 3 |\n", "claims": "new\n"}
    assert "Text before." in text and "Prose between." in text
    assert replace_blocks(text, read_blocks(text)) == text


def test_a_block_missing_on_either_side_is_an_error():
    with pytest.raises(ReportError, match=r"missing \['extra'\]"):
        replace_blocks(README, {"table": "", "claims": "", "extra": ""})
    with pytest.raises(ReportError, match=r"not rendered \['claims'\]"):
        replace_blocks(README, {"table": ""})


def test_sync_reports_stale_blocks_and_writes_only_when_asked(tmp_path: Path):
    path = tmp_path / "README.md"
    path.write_text(README)
    fresh = {"table": "| a | b |\n|---|---|\n| 1 | 2 |", "claims": "new"}
    assert sync_readme(path, fresh, write=False) == ["claims"]
    assert path.read_text() == README
    assert sync_readme(path, fresh, write=True) == ["claims"]
    assert sync_readme(path, fresh, write=False) == []
