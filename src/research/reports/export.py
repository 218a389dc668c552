"""The tables a paper needs, from a report: per variant and metric the mean, its interval and n,
and the difference to the baseline with its interval; bold only where the report decided a
variant is better (`tables.better_variants`), never for the best mean alone.

Written as paper.md (Markdown), paper.tex (a booktabs table in a document that compiles on its
own; copy the `table` environment into a paper) and paper.csv (one row per variant x metric,
every number unrounded). The numbers are the report's own: nothing is re-decided here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from research.reports.errors import ReportError
from research.reports.stats import CONFIDENCE
from research.reports.tables import better_variants, decimals, number, signed

if TYPE_CHECKING:
    from research.reports.report import Report

FORMATS = ("markdown", "latex", "csv")
FILES = {"markdown": "paper.md", "latex": "paper.tex", "csv": "paper.csv"}
_NONE = "–"
_ARROWS = {"max": "↑", "min": "↓"}
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_SYMBOLS = {"↑": r"$\uparrow$", "↓": r"$\downarrow$", "−": "$-$", "±": r"$\pm$"}


def cells(report: Report) -> pd.DataFrame:
    """One row per variant x metric: the variant's mean, std, interval and n, and its
    difference to the baseline (interval, n, Holm-adjusted p, verdict and why none), and
    `bold`."""
    rows = []
    for metric in report.metrics:
        found = {c.variant: c for c in report.comparisons.get(metric, [])}
        bold = better_variants(report.comparisons.get(metric, []))
        for variant, row in report.table.iterrows():
            c = found.get(str(variant))
            rows.append(
                {
                    "variant": str(variant),
                    "baseline": variant == report.baseline,
                    "metric": metric,
                    "direction": report.directions.get(metric),
                    "n": int(row[f"{metric} n"]),
                    "mean": row[f"{metric} mean"],
                    "std": row[f"{metric} std"],
                    "low": row[f"{metric} ci_low"],
                    "high": row[f"{metric} ci_high"],
                    "diff": c.diff if c else math.nan,
                    "diff_low": c.low if c else math.nan,
                    "diff_high": c.high if c else math.nan,
                    "diff_n": c.n if c else pd.NA,
                    "paired": c.paired if c else pd.NA,
                    "p_holm": c.p_holm if c else math.nan,
                    "verdict": c.verdict if c else None,
                    "note": c.note if c else None,  # why no claim could be made
                    "bold": variant in bold,
                }
            )
    return pd.DataFrame(rows)


def _interval(value: float, low: float, high: float, places: int, sign: bool) -> str:
    show = (lambda x: signed(x, places)) if sign else (lambda x: number(x, places))
    if math.isnan(value):
        return _NONE
    if math.isnan(low) or math.isnan(high):
        return show(value)
    return f"{show(value)} [{show(low)}, {show(high)}]"


def _value_text(cell: dict[str, Any]) -> str:
    places = decimals(cell["mean"], cell["std"])
    text = _interval(cell["mean"], cell["low"], cell["high"], places, sign=False)
    return text if text == _NONE else f"{text} (n={cell['n']})"


def _diff_text(cell: dict[str, Any]) -> str:
    if cell["baseline"]:
        return "baseline"
    if math.isnan(cell["diff"]):
        return _NONE
    spread = (cell["diff_high"] - cell["diff_low"]) / 2
    places = decimals(cell["diff"], spread if math.isfinite(spread) else math.nan)
    text = _interval(cell["diff"], cell["diff_low"], cell["diff_high"], places, sign=True)
    return f"{text} (n={cell['diff_n']})"


def _grid(report: Report) -> tuple[list[str], list[list[tuple[str, bool]]]]:
    """The header and, per variant, its cells as (text, bold): a value column and a Δ column
    per metric (the Δ column only when there is a baseline)."""
    frame = cells(report)
    header = ["variant"]
    for metric in report.metrics:
        arrow = _ARROWS.get(report.directions.get(metric) or "", "")
        header.append(f"{metric} {arrow}".strip())
        if report.baseline:
            header.append(f"Δ {metric}")
    body = []
    for variant in report.table.index:
        line = [(str(variant), False)]
        for metric in report.metrics:
            (cell,) = frame[(frame["variant"] == variant) & (frame["metric"] == metric)].to_dict(
                "records"
            )
            line.append((_value_text(cell), cell["bold"]))
            if report.baseline:
                line.append((_diff_text(cell), cell["bold"]))
        body.append(line)
    return header, body


def legend(report: Report) -> str:
    """What the numbers are, in one paragraph under the table."""
    text = (
        f"Mean [{CONFIDENCE:.0%} interval of the mean, as in report.md] (n = completed runs with "
        "a value) over seeds"
    )
    if report.baseline:
        text += (
            f"; Δ = variant − baseline `{report.baseline}` [{CONFIDENCE:.0%} interval of the "
            "difference] (n = seeds paired, or the smaller sample unpaired)"
        )
    return text + "; bold = decided better than the baseline (report.md says how)."


def to_markdown(report: Report) -> str:
    header, body = _grid(report)
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for line in body:
        shown = [f"**{t}**" if bold else t for t, bold in line]
        lines.append("| " + " | ".join(s.replace("|", "\\|") for s in shown) + " |")
    return "\n".join([*lines, "", legend(report), ""])


def latex_escape(text: str) -> str:
    """`text` safe in LaTeX's text mode: its special characters escaped, arrows and true minus
    signs as math."""
    out = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)
    for symbol, latex in _LATEX_SYMBOLS.items():
        out = out.replace(symbol, latex)
    return out.replace("Δ", r"$\Delta$")


def to_latex(report: Report) -> str:
    """A standalone document around one booktabs table."""
    header, body = _grid(report)
    rows = [" & ".join(latex_escape(h) for h in header) + r" \\"]
    for line in body:
        rows.append(
            " & ".join(
                rf"\textbf{{{latex_escape(t)}}}" if bold else latex_escape(t) for t, bold in line
            )
            + r" \\"
        )
    return "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{booktabs}",
            r"\usepackage[T1]{fontenc}",
            r"\begin{document}",
            r"\begin{table}",
            r"\centering",
            r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
            r"\toprule",
            rows[0],
            r"\midrule",
            *rows[1:],
            r"\bottomrule",
            r"\end{tabular}",
            rf"\caption{{{latex_escape(legend(report))}}}",
            r"\end{table}",
            r"\end{document}",
            "",
        ]
    )


def parse_formats(values: list[str]) -> list[str]:
    """`--format latex --format csv` or `--format latex,csv` -> ["latex", "csv"]; a name not in
    FORMATS is a ReportError naming the valid ones."""
    chosen = [v.strip() for value in values for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in FORMATS]
    if unknown:
        raise ReportError(
            f"--format {', '.join(unknown)} is not valid; choose from {', '.join(FORMATS)} "
            "(repeat the option or give a comma list)"
        )
    return list(dict.fromkeys(chosen))


def write(report: Report, formats: list[str], out_dir: Path) -> list[Path]:
    """Write the paper tables in `formats` into `out_dir`; returns their paths."""
    written = []
    for name in formats:
        path = out_dir / FILES[name]
        if name == "csv":
            cells(report).to_csv(path, index=False)
        else:
            path.write_text(to_markdown(report) if name == "markdown" else to_latex(report))
        written.append(path)
    return written
