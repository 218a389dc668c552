"""research-report <report>/runs.csv: a report re-rendered from what an earlier report recorded,
when the run dirs behind it are gone; absolute run dirs of another machine made relative."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from research.cli.report import main
from tests.reports.test_export import write_runs

MACHINE = "/work/study/logs/ablations/demo"


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("research-report: error: "), err
    return err


def _text_files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir() if p.suffix in (".md", ".csv", ".json")}


def test_a_runs_csv_re_renders_its_report_without_the_run_dirs(tmp_path: Path, capsys):
    ablation = write_runs(tmp_path)
    out = tmp_path / "report"
    assert (
        main([str(ablation), "--out", str(out), "--baseline", "base", "--metric", "test/acc"]) == 0
    )
    first = capsys.readouterr().out
    before = _text_files(out)
    shutil.rmtree(ablation)  # only the report folder is left, as for a committed study

    assert main([str(out / "runs.csv")]) == 0  # the options come from provenance.json
    assert capsys.readouterr().out == first  # the same tables, baseline and comparisons
    after = _text_files(out)
    assert (after["runs.csv"], after["report.csv"]) == (before["runs.csv"], before["report.csv"])
    assert "no redrawn learning curves" in after["report.md"]
    assert "Source: `ablations/demo`: 12 runs" in after["report.md"]
    record = json.loads(after["provenance.json"])
    assert record["read_from"] == "runs.csv" and record["options"]["baseline"] == "base"
    cell = next(c for c in record["cells"] if c["variant"] == "wide_50%")
    assert cell["config_diff"] is None and cell["git_commits"] == ["c0ffee0", "c0ffee1"]
    assert [r["seed"] for r in cell["runs"]] == [0, 1, 2, 3]


def test_absolute_run_dirs_of_another_machine_become_relative(tmp_path: Path, capsys):
    """A runs.csv written before reports named run dirs relative to their folder (and before
    provenance.json): its run dirs are written relative to the ablation folder they were read
    from, nothing in the new report names that machine's folders, and the report keeps the
    earlier one's metrics and baseline."""
    ablation = write_runs(tmp_path)
    out = tmp_path / "report"
    assert (
        main([str(ablation), "--out", str(out), "--baseline", "base", "--metric", "test/acc"]) == 0
    )
    header = (out / "report.csv").read_text().splitlines()[0]
    runs = pd.read_csv(out / "runs.csv")
    relative = list(runs["run_dir"])
    runs["run_dir"] = [f"{MACHINE}/{d}" for d in relative]
    runs.to_csv(out / "runs.csv", index=False)
    (out / "provenance.json").unlink()  # as old reports had none
    capsys.readouterr()

    # the metrics and baseline of the earlier report, from its report.csv and report.md
    assert main([str(out / "runs.csv")]) == 0
    assert (out / "report.csv").read_text().splitlines()[0] == header
    assert "## Against the baseline `base`" in (out / "report.md").read_text()
    assert list(pd.read_csv(out / "runs.csv")["run_dir"]) == relative
    for name, text in _text_files(out).items():
        assert "/work/" not in text and str(tmp_path) not in text, name
    assert "Source: `ablations/demo`" in (out / "report.md").read_text()
    assert json.loads((out / "provenance.json").read_text())["ablation"] == "demo"


def test_recorded_source_mistakes_are_one_line_errors(tmp_path: Path, capsys):
    ablation = write_runs(tmp_path)
    out = tmp_path / "report"
    assert main([str(ablation), "--out", str(out)]) == 0
    capsys.readouterr()
    before = _text_files(out)
    assert main([str(out / "runs.csv"), "--where", "model.width=8"]) == 2
    assert "--where cannot filter" in _error_line(capsys)
    assert main([str(out / "report.md")]) == 2
    assert "is a file; pass a folder of run dirs, an ablation name, or a report's runs.csv" in (
        _error_line(capsys)
    )
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert main([str(tmp_path / "other.csv")]) == 2
    assert "not a report's runs.csv (it needs the columns run_dir" in _error_line(capsys)
    assert _text_files(out) == before  # nothing rewritten


@pytest.mark.parametrize(
    ("run_dirs", "relative", "origin", "ablation"),
    [
        (  # an ablation's folder, sweeps of two times: relative to the ablation's folder
            [
                "/home/u/logs/ablations/abc+x=1/t1/0_a_s0",
                "/home/u/logs/ablations/abc+x=1/t2/0_b_s0",
            ],
            ["t1/0_a_s0", "t2/0_b_s0"],
            "ablations/abc+x=1",
            "abc",
        ),
        (  # any other folder: relative to the runs' common folder
            ["/Users/u/logs/train/multiruns/t1/0_a_s0", "/Users/u/logs/train/multiruns/t1/1_b_s0"],
            ["0_a_s0", "1_b_s0"],
            "t1",
            None,
        ),
    ],
)
def test_absolute_run_dirs_are_made_relative_to_the_folder_they_were_read_from(
    tmp_path: Path, run_dirs: list[str], relative: list[str], origin: str, ablation: str | None
):
    from research.reports.recorded import load_recorded

    rows = [f"{d},{d[-4]},completed,0,0.5" for d in run_dirs]
    (tmp_path / "runs.csv").write_text(
        "\n".join(["run_dir,variant,status,seed,final.test/acc", *rows])
    )
    recorded = load_recorded(tmp_path / "runs.csv")
    assert list(recorded.runs["run_dir"]) == relative
    assert (recorded.origin, recorded.ablation) == (origin, ablation)
