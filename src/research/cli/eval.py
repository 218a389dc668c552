"""`research-eval`: re-evaluate a finished run's checkpoint with that run's own saved config."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from research.cli.app import eval_task, run
from research.cli.console import protect_console


def main(argv: Sequence[str] | None = None) -> int:
    """Run `research-eval` with `argv` (default: the process's arguments); the exit status."""
    return run("research-eval", "eval", eval_task, argv)


def entry() -> None:
    protect_console()
    sys.exit(main())
