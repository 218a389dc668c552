"""Paper tables (--format markdown|latex|csv) and provenance.json: the report's own numbers, bold
only where decided, every cell traced to its runs, seeds, commits and config diff."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from research.cli.report import main
from research.reports import Report, build_report
from research.reports.export import latex_escape
from research.reports.tables import better_variants

# test/acc per seed: `wide_50%` is far above the baseline at every seed, `same` is not.
VALUES = {
    "base": [0.50, 0.52, 0.51, 0.49],
    "wide_50%": [0.70, 0.73, 0.71, 0.72],
    "same": [0.50, 0.53, 0.49, 0.51],
}
WIDTHS = {"base": 8, "wide_50%": 64, "same": 8}
LRS = {"base": 0.1, "wide_50%": 0.1, "same": 0.2}


def write_runs(folder: Path, commit: str = "c0ffee") -> Path:
    """An ablation folder `ablations/demo/<time>/<job>` with known values, configs and commits;
    returns the ablation folder."""
    ablation = folder / "ablations" / "demo"
    job = 0
    for variant, values in VALUES.items():
        for seed, acc in enumerate(values):
            run_dir = ablation / "2026-01-01_00-00-00-000000" / f"{job}_{variant[:4]}_s{seed}"
            run_dir.mkdir(parents=True)
            config = {
                "model": {"width": WIDTHS[variant]},
                "optimizer": {"lr": LRS[variant]},
                "seed": seed,
                "variant": variant,
            }
            payload: dict[str, Any] = {
                "status": "completed",
                "error": None,
                "run_id": f"{job // 4:012x}-s{seed}",
                "config_hash": f"{job // 4:012x}",
                "seed": seed,
                "variant": variant,
                "overrides": [f"seed={seed}", f"variant={variant}"],
                "config": config,
                "monitor": "val/acc",
                "mode": "max",
                "best": {"val/acc": acc},
                "final": {"val/acc": acc, "test/acc": acc},
                "wall_time_s": 1.0,
                "git": {"commit": f"{commit}{seed % 2}", "dirty": seed == 3},
                "wandb": {"project": "proj", "group": "demo"},
            }
            (run_dir / "metrics.json").write_text(json.dumps(payload))
            job += 1
    return ablation


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    ablation = write_runs(tmp_path_factory.mktemp("paper"))
    return build_report(
        ablation,
        ablation / "report",
        ["test/acc"],
        baseline="base",
        formats=["markdown", "latex", "csv"],
    )


def test_paper_csv_holds_the_reports_numbers_and_bold_only_where_decided(report: Report):
    paper = pd.read_csv(report.out_dir / "paper.csv").set_index("variant")
    table = report.table
    for variant, values in VALUES.items():
        row = paper.loc[variant]
        assert row["n"] == len(values) == table.loc[variant, "final.test/acc n"]
        assert row["mean"] == pytest.approx(sum(values) / len(values))
        for ours, theirs in (("low", "ci_low"), ("high", "ci_high")):
            assert row[ours] == pytest.approx(table.loc[variant, f"final.test/acc {theirs}"])
    found = {c.variant: c for c in report.comparisons["final.test/acc"]}
    for variant, c in found.items():
        assert (paper.loc[variant, "diff"], paper.loc[variant, "diff_low"]) == pytest.approx(
            (c.diff, c.low)
        )
        assert paper.loc[variant, "diff_n"] == c.n == 4
    decided = better_variants(report.comparisons["final.test/acc"])
    assert decided == {"wide_50%"}  # the data leave no doubt; `same` is within noise
    assert set(paper.index[paper["bold"]]) == decided
    assert paper.loc["base", "baseline"] and pd.isna(paper.loc["base", "diff"])


def test_paper_markdown_bolds_the_decided_variant_and_shows_n(report: Report):
    text = (report.out_dir / "paper.md").read_text()
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    assert rows["wide_50%"].count("**") == 4  # its value and its Δ
    assert "**" not in rows["same"] and "**" not in rows["base"]
    assert "(n=4)" in rows["same"] and "| baseline |" in rows["base"]


def test_paper_latex_is_a_booktabs_document_with_escaped_text(report: Report):
    text = (report.out_dir / "paper.tex").read_text()
    assert text.startswith("\\documentclass{article}\n\\usepackage{booktabs}\n")
    for command in ("\\toprule", "\\midrule", "\\bottomrule", "\\end{document}"):
        assert text.count(command) == 1
    begins = re.findall(r"\\begin\{(\w+)\}", text)
    assert begins == ["document", "table", "tabular"]
    assert re.findall(r"\\end\{(\w+)\}", text) == begins[::-1]
    body = text[text.index("\\toprule") : text.index("\\bottomrule")]
    rows = [ln for ln in body.splitlines() if ln.endswith("\\\\")]
    assert len(rows) == 1 + len(VALUES)
    for row in rows:  # 3 columns: every other & is escaped, no raw _ % or #
        assert len(re.findall(r"(?<!\\)&", row)) == 2
        assert not re.search(r"(?<!\\)[_%#]", row)
    assert "wide\\_50\\% & \\textbf{" in text and "final.test/acc $\\uparrow$" in text
    assert text.count("\\textbf{") == 2  # the value and the Δ of the decided variant


@pytest.mark.parametrize(
    ("text", "latex"),
    [
        ("a_b & 5% #1 $x", "a\\_b \\& 5\\% \\#1 \\$x"),
        ("{x}~^\\", "\\{x\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{}"),
        ("−0.1 ± 2 ↑ Δ", "$-$0.1 $\\pm$ 2 $\\uparrow$ $\\Delta$"),
    ],
)
def test_latex_escape(text: str, latex: str):
    assert latex_escape(text) == latex


def test_provenance_traces_each_cell_to_runs_commits_and_config_diff(report: Report):
    text = (report.out_dir / "provenance.json").read_text()
    record = json.loads(text)
    assert str(report.source) not in text and "/tmp/" not in text
    assert (record["source"], record["baseline"], record["read_from"]) == (
        "ablations/demo",
        "base",
        "run dirs",
    )
    cells = {(c["variant"], c["metric"]): c for c in record["cells"]}
    wide = cells["wide_50%", "final.test/acc"]
    assert [r["seed"] for r in wide["runs"]] == [0, 1, 2, 3]
    assert [r["run_dir"] for r in wide["runs"]] == [
        f"2026-01-01_00-00-00-000000/{job}_wide_s{job - 4}" for job in range(4, 8)
    ]
    assert [r["run_id"] for r in wide["runs"]] == [f"{1:012x}-s{s}" for s in range(4)]
    assert wide["git_commits"] == ["c0ffee0", "c0ffee1"]
    assert [r["git_dirty"] for r in wide["runs"]] == [False, False, False, True]
    assert wide["config_diff"] == {"model.width": {"baseline": 8, "variant": 64}}
    assert cells["same", "final.test/acc"]["config_diff"] == {
        "optimizer.lr": {"baseline": 0.1, "variant": 0.2}
    }
    assert cells["base", "final.test/acc"]["config_diff"] == {}
    assert wide["bold"] and not cells["same", "final.test/acc"]["bold"]
    assert wide["n"] == 4 and isinstance(wide["n"], int) and wide["against_baseline"]["n"] == 4


def test_cli_format_option_writes_the_paper_tables(tmp_path: Path, capsys):
    ablation = write_runs(tmp_path)
    out = tmp_path / "out"
    argv = [str(ablation), "--out", str(out), "--baseline", "base"]
    assert main([*argv, "--format", "latex,csv", "--format", "markdown"]) == 0
    assert {"paper.tex", "paper.csv", "paper.md", "provenance.json"} <= {
        p.name for p in out.iterdir()
    }
    assert "paper.tex" in capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "bad"), "--format", "latex,pdf"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("research-report: error: --format pdf ")
    assert "choose from markdown, latex, csv" in err and not (tmp_path / "bad").exists()
