"""`research-report`: the table and plots of a multirun, an ablation or any folder of runs.

    research-report <ablation name | folder> [--out DIR] [--metric M ...]

A name that is not a folder is looked up as `logs/ablations/<name>/` under the current
directory (or $RESEARCH_LOG_DIR/ablations/<name>/). Exit status 2 on a bad source or metric.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def resolve_source(source: str) -> Path:
    """A folder as given, else the ablation of that name under the log dir."""
    path = Path(source)
    if path.is_dir():
        return path
    log_dir = Path(os.environ.get("RESEARCH_LOG_DIR", "logs"))
    ablation = log_dir / "ablations" / source
    if ablation.is_dir():
        return ablation
    raise FileNotFoundError(f"{source} is neither a folder nor an ablation in {ablation.parent}/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="research-report", description=__doc__.splitlines()[0])
    parser.add_argument("source", help="ablation name, multirun dir or any folder of run dirs")
    parser.add_argument("--out", type=Path, help="output folder (default: <source>/report)")
    parser.add_argument(
        "--metric",
        action="append",
        help="a column such as best.test/acc or final.val/loss (repeatable; default: the "
        "monitored metric and every test metric of the best checkpoint)",
    )
    args = parser.parse_args(argv)

    from research.reports import build_report
    from research.reports.runs import NoRunsError

    try:
        source = resolve_source(args.source)
        report = build_report(source, args.out or source / "report", args.metric)
    except (FileNotFoundError, NoRunsError, KeyError) as err:
        message = err.args[0] if isinstance(err, KeyError) else str(err)
        print(f"research-report: error: {message}", file=sys.stderr)
        return 2
    print(report.markdown)
    print(f"wrote {', '.join(p.name for p in report.files)} to {report.files[0].parent}")
    return 0


def entry() -> None:
    sys.exit(main())
