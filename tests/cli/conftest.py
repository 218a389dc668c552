"""Fixtures of the end-to-end tests; the helpers they use live in tests/helpers/cli.py."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
