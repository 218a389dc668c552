"""Tables in a study's README that are generated, not typed: each sits between
`<!-- derived: NAME -->` and `<!-- /derived: NAME -->`, and the study's own derive script
renders every block from the per-run files committed beside it. A test compares the README's
blocks with a fresh rendering, so a table cannot drift from the data it claims to show.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from research.reports.errors import ReportError

_BLOCK = re.compile(
    r"(<!-- derived: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /derived: (?P=name) -->)", re.S
)


def read_blocks(text: str) -> dict[str, str]:
    """Name -> body of every derived block in `text`."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def replace_blocks(text: str, blocks: dict[str, str]) -> str:
    """`text` with every block's body replaced by its rendering; a block the README lacks, or
    one the renderer does not know, is an error (a renamed table must be renamed in both)."""
    present = read_blocks(text)
    missing = sorted(set(blocks) - set(present))
    unknown = sorted(set(present) - set(blocks))
    if missing or unknown:
        raise ReportError(
            f"README blocks out of step with the derive script: missing {missing or 'none'}, "
            f"not rendered {unknown or 'none'}"
        )

    def body(match: re.Match[str]) -> str:
        rendered = blocks[match["name"]].rstrip("\n") + "\n"
        return f"{match.group(1)}{rendered}{match.group(4)}"

    return _BLOCK.sub(body, text)


def stale_blocks(readme: Path, blocks: dict[str, str]) -> list[str]:
    """The names of the README's blocks whose text differs from `blocks`."""
    text = readme.read_text()
    fresh = read_blocks(replace_blocks(text, blocks))
    return sorted(name for name, body in read_blocks(text).items() if fresh[name] != body)


def sync_readme(readme: Path, blocks: dict[str, str], write: bool) -> list[str]:
    """Check (or with `write`, rewrite) the README's blocks; returns the stale block names."""
    stale = stale_blocks(readme, blocks)
    if write and stale:
        readme.write_text(replace_blocks(readme.read_text(), blocks))
    return stale


def derive_cli(
    description: str,
    readme: Path,
    render: Callable[[], dict[str, str]],
    on_write: Callable[[], None] | None = None,
) -> None:
    """The command line of a study's derive script: print the blocks, `--check` them against the
    README (exit 1 when stale), or `--write` them (and run `on_write`, e.g. to redraw plots)."""
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the README differs")
    mode.add_argument("--write", action="store_true", help="rewrite the README's blocks")
    args = parser.parse_args()
    rendered = render()
    if not (args.check or args.write):
        for name, body in rendered.items():
            print(f"<!-- derived: {name} -->\n{body}\n")
        return
    stale = sync_readme(readme, rendered, write=args.write)
    if args.write and on_write is not None:
        on_write()
    if args.check and stale:
        sys.exit(f"{readme.name} blocks differ from the records: {', '.join(stale)}")
    print(f"{'rewrote' if args.write else 'checked'}: {', '.join(stale) or 'nothing stale'}")
