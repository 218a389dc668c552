"""`research-eval`: re-evaluate a finished run's checkpoint with that run's own saved config.

The run dir is `run_dir=<dir>` or, as a shell user would type it, a bare argument:
`research-eval logs/train/runs/<run> ckpt=last`.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from research.cli.app import eval_task, run
from research.cli.console_script import run_console_script
from research.config.errors import ConfigError
from research.config.names import quoted

PROG = "research-eval"
# Hydra's options that take a value: the argument after one is that value, not a run dir.
VALUE_OPTIONS = frozenset(
    ("--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn")
    + ("--config-dir", "-cd", "--info", "-i", "--experimental-rerun")
)


def _is_run_dir(arg: str, previous: str | None) -> bool:
    """A bare argument names a run dir: every Hydra override but `~key` holds `=` (a folder
    that exists is a run dir even with `=` in its name)."""
    if previous in VALUE_OPTIONS or arg.startswith("-"):
        return False
    if "=" in arg:
        return Path(arg).expanduser().is_dir()
    return not arg.startswith("~") or arg == "~" or arg.startswith("~/")


def positional_run_dir(args: list[str]) -> list[str]:
    """`args` with a bare run dir as its `run_dir=` override; more than one run dir is a
    one-line ConfigError."""
    if "--help" in args or "-h" in args:
        return args  # `--help NODE ...` names config nodes
    bare = [i for i, arg in enumerate(args) if _is_run_dir(arg, args[i - 1] if i else None)]
    given = [arg for arg in args if arg.startswith("run_dir=")]
    if len(bare) + len(given) > 1:
        named = ", ".join([args[i] for i in bare] + given)
        raise ConfigError(
            f"one run dir per evaluation, got {len(bare) + len(given)} ({named}); evaluate "
            f"several with -m run_dir=<dir>,<dir>"
        )
    return [f"run_dir={quoted(arg)}" if i in bare else arg for i, arg in enumerate(args)]


def check_quoted_items(args: list[str]) -> None:
    """`overrides=[data.batch_size=64]`, as one first types it: Hydra's grammar reads the `=`
    inside the list as a syntax error; name the quoted form instead of that parse error."""
    for arg in args:
        if not (arg.startswith("overrides=[") and arg.endswith("]")):
            continue
        items = re.split(r",(?=[+\w.]+=)", arg[len("overrides=[") : -1])
        bare = [item for item in items if "=" in item and not item.startswith(("'", '"'))]
        if bare:
            quoted = ",".join(json.dumps(item) for item in items)
            raise ConfigError(
                f"{arg}: quote each item, since Hydra reads '=' in an unquoted list item as a "
                f"syntax error: 'overrides=[{quoted}]'"
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Run `research-eval` with `argv` (default: the process's arguments); the exit status."""
    typed = list(sys.argv[1:] if argv is None else argv)
    try:
        check_quoted_items(typed)
        args = positional_run_dir(typed)
    except ConfigError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    return run(PROG, "eval", eval_task, args, command=shlex.join([PROG, *typed]))


def entry() -> None:
    run_console_script(main)
