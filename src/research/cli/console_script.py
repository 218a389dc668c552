"""What every `research-*` console script does around its `main`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from research.cli.console import protect_console
from research.cli.shutdown import skip_final_collections


def run_console_script(main: Callable[[], int]) -> NoReturn:
    """Run `main` as a process's command: a console that fails never ends it, the interpreter's
    final collections are skipped at exit, and `main`'s value is the exit status."""
    protect_console()
    skip_final_collections()
    sys.exit(main())
