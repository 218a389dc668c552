"""Another checkout's package run beside this one: the `--baseline` of the benchmarks that
measure a change against what it replaced (`overhead.py`, `startup.py`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_baseline_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        type=lambda path: str(Path(path).resolve()),  # the runs start in a temporary folder
        help="another checkout's src/ to run in the same rounds",
    )


def put_first_on_path(env: dict[str, str], src: str | None) -> None:
    """Make `src` (a checkout's `src/`, or None for this one) the package a child process of
    `env` imports."""
    if src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
