"""`research-report`: a table (mean ± std over seeds) and plots of a multirun, an ablation or any
folder of run dirs, from the files the runs left on disk.

Imports neither torch nor lightning, so it starts in about a second.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from research.cli.console_script import run_console_script
from research.reports import ReportError, build_report
from research.reports.export import parse_formats
from research.reports.recorded import RUNS_FILE
from research.reports.source import ablation_spec, resolve_source, variant_names

_SOURCE_HELP = (
    "a folder holding run dirs at any depth (a multirun dir logs/<task>/multiruns/<time>/, an "
    "ablation folder, logs/ itself), or an ablation name: a name that is not an existing path "
    "means the folder <log dir>/ablations/<name>/, where <log dir> is $RESEARCH_LOG_DIR, else "
    "logs/ under the project root ($RESEARCH_ROOT, else the checkout). All the ablation's sweep "
    "folders are read; a run re-run by a later research-ablate counts once, as its newest "
    "completed attempt. The ablation file conf/ablation/<name>.yaml gives the default "
    "--metric (`metrics`), --baseline (`baseline`) and the axes of the main-effect table; a "
    "folder <log dir>/ablations/<name>[+overrides]/ is read with that file too. Or a report's "
    "runs.csv, when the run dirs behind it are gone: the report is re-rendered from the values "
    "it recorded (no redrawn curves, no config diff), into the runs.csv's folder by default, "
    "with the options its provenance.json recorded."
)


def _check_recorded(path: Path) -> None:
    if path.suffix != ".csv":
        raise ReportError(
            f"{path} is a file; pass a folder of run dirs, an ablation name, or a report's "
            f"{RUNS_FILE}"
        )


def _direction(text: str) -> tuple[str, str]:
    metric, _, way = text.rpartition("=")
    if not metric:
        raise argparse.ArgumentTypeError(f"{text!r} is not METRIC=max or METRIC=min")
    return metric, way


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="research-report",
        description="Aggregate run dirs per variant over seeds: report.md (table + plots), "
        "report.csv, runs.csv, provenance.json (the runs, seeds, git commits and config diff "
        "behind each cell) and PNG plots; the table is printed. A run dir that cannot be "
        "read, or holds values the report cannot use (an inf/NaN metric, a seed that is not a "
        "64-bit integer, ...), is flagged with a warning and the rest is reported. Exit status "
        "0 on success, 2 on a bad source, metric or option, 1 when no run completed with a "
        "value to report (the report is still written) or --wandb could not log.",
    )
    parser.add_argument("source", help=_SOURCE_HELP)
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output folder (default: <source>/report/, or a runs.csv's own folder)",
    )
    parser.add_argument(
        "--format",
        action="append",
        default=[],
        metavar="FORMAT",
        help="also write the tables a paper needs (mean, interval, n, Δ to the baseline; bold "
        "only where decided) as paper.md (markdown), paper.tex (latex: a booktabs table) or "
        "paper.csv (csv); repeatable or a comma list, e.g. --format latex,csv",
    )
    parser.add_argument(
        "--metric",
        nargs="+",
        action="extend",
        metavar="M",
        help="table columns, e.g. final.test/acc best.val/loss (a bare test/acc means "
        "final.test/acc); default: every final.test/* metric plus best.<monitored metric>",
    )
    parser.add_argument(
        "--direction",
        type=_direction,
        action="append",
        default=[],
        metavar="M=max|min",
        help="which way a metric is better, where neither its name (acc, ndcg, mrr, recall, "
        "f1: max; loss, perplexity, ppl, error: min) nor the runs' checkpoint mode tells",
    )
    parser.add_argument(
        "--baseline",
        metavar="VARIANT",
        help="the variant the others are compared with (difference, CI, Holm-adjusted p); "
        "default: the ablation file's `baseline`, else `default`, else the first variant",
    )
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep only runs whose config has this value (repeatable), e.g. "
        "--where trainer.max_epochs=10",
    )
    parser.add_argument(
        "--band",
        choices=("std", "minmax"),
        default="std",
        help="the learning curves' band: ±1 std (default) or min-max over seeds",
    )
    parser.add_argument(
        "--x", choices=("epoch", "step"), default="epoch", help="learning curves' x axis"
    )
    parser.add_argument(
        "--wandb",
        action="store_true",
        help="also log the tables as a wandb.Table in a `report` run of the runs' W&B group "
        "(online or offline as WANDB_MODE, else as the runs were logged)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        formats = parse_formats(args.format)
        if Path(args.source).is_file():
            source, ablation, spec, out = Path(args.source), None, None, args.out
            _check_recorded(source)
        else:
            source, ablation = resolve_source(args.source)
            spec = ablation_spec(ablation)
            out = args.out or source / "report"
        metrics = args.metric or [str(m) for m in (spec or {}).get("metrics") or []] or None
        report = build_report(
            source,
            out,
            metrics,
            direction=dict(args.direction),
            band=args.band,
            x=args.x,
            formats=formats,
            where=args.where,
            baseline=args.baseline,
            ablation=spec,
            ablation_name=ablation,
            names=variant_names(ablation, spec or {}, source),
        )
    except ReportError as err:
        print(f"research-report: error: {err}", file=sys.stderr)
        return 2
    for note in report.warnings:
        print(f"research-report: warning: {note}", file=sys.stderr)
    print(report.markdown, end="")
    tables = [p.name for p in report.files if p not in report.plots]
    print(
        f"research-report: wrote {', '.join(tables)} and {len(report.plots)} plots to "
        f"{report.out_dir}",
        file=sys.stderr,
    )
    if not report.usable:
        print(
            f"research-report: error: no run under {source} completed with a value to report "
            f"({len(report.runs)} runs; see {report.out_dir / 'report.md'})",
            file=sys.stderr,
        )
        return 1
    if args.wandb:
        from research.config.errors import one_line

        try:
            from research.reports.wandb_table import log_report

            print(log_report(report), file=sys.stderr)
        except Exception as err:  # W&B's failures are many (network, login); the files stand.
            print(
                f"research-report: error: wandb: {type(err).__name__}: {one_line(err)}",
                file=sys.stderr,
            )
            return 1
    return 0


def entry() -> None:
    """The console script pyproject.toml names (`research.cli.report:entry`)."""
    run_console_script(main)


if __name__ == "__main__":
    entry()
