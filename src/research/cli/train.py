"""`research-train`: train a model composed from conf/ (see research.cli.app for what runs)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from research.cli.app import run, train_task
from research.cli.console import protect_console
from research.cli.shutdown import skip_final_collections


def main(argv: Sequence[str] | None = None) -> int:
    """Run `research-train` with `argv` (default: the process's arguments); the exit status."""
    return run("research-train", "train", train_task, argv)


def entry() -> None:
    protect_console()
    skip_final_collections()
    sys.exit(main())
