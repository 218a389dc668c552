"""`research-train`: train a model composed from conf/ (see research.cli.app for what runs)."""

from __future__ import annotations

from collections.abc import Sequence

from research.cli.app import run, train_task
from research.cli.console_script import run_console_script


def main(argv: Sequence[str] | None = None) -> int:
    """Run `research-train` with `argv` (default: the process's arguments); the exit status."""
    return run("research-train", "train", train_task, argv)


def entry() -> None:
    run_console_script(main)
