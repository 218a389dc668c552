"""build_report: the files it writes (numeric CSV, valid PNGs, report.md), the curve numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from research.reports import Report, ReportError, build_report
from research.reports.plots import curve_stats
from research.reports.runs import load_histories

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(runs_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(runs_folder, tmp_path_factory.mktemp("out") / "report")


def test_writes_tables_and_plots(report: Report):
    names = {p.name for p in report.files}
    assert {"report.md", "report.csv", "runs.csv", "provenance.json"} <= names
    assert not names & {"paper.md", "paper.tex", "paper.csv"}  # only with --format
    expected_plots = {
        "curve_val-acc.png",
        "curve_val-loss.png",
        "curve_train-loss.png",
        "points_final.test-acc.png",
        "points_final.test-loss.png",
        "points_best.val-acc.png",
    }
    assert {n for n in names if n.endswith(".png")} == expected_plots
    for path in report.files:
        assert path.parent == report.out_dir and path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes().startswith(PNG) and path.stat().st_size > 5000


def test_report_csv_is_numeric_and_equals_the_table(report: Report):
    csv = pd.read_csv(report.out_dir / "report.csv", index_col="variant")
    assert all(pd.api.types.is_numeric_dtype(dtype) for dtype in csv.dtypes)
    pd.testing.assert_frame_equal(csv, report.table, check_dtype=False, check_exact=False)


def test_runs_csv_has_every_run(report: Report, runs_folder: Path):
    runs = pd.read_csv(report.out_dir / "runs.csv")
    assert len(runs) == len(report.runs) == 12
    assert runs["status"].value_counts().to_dict() == {"completed": 8, "failed": 3, "diverged": 1}
    assert pd.api.types.is_numeric_dtype(runs["final.test/acc"])


def test_report_md_has_the_table_failures_warnings_and_plots(report: Report, runs_folder: Path):
    text = (report.out_dir / "report.md").read_text()
    assert len(report.warnings) == 2  # the corrupt and the killed run
    assert report.markdown in text
    assert "12 runs (8 completed, 3 failed, 1 diverged)" in text
    corrupt = next(runs_folder.rglob("4_wide_s3")) / "metrics.json"
    shown = corrupt.relative_to(runs_folder)  # relative to the folder it describes
    assert f"- {shown}: metrics.json is not a readable JSON object" in text
    assert "| diverged | diverged: something broke |" in text  # first line of the error only
    for path in report.plots:
        assert f"]({path.name})" in text


def test_files_name_runs_relative_to_the_source(report: Report, runs_folder: Path):
    """runs.csv's run dirs are paths under the source folder, and no file the report writes
    names a folder of this machine (stderr keeps full paths)."""
    runs = pd.read_csv(report.out_dir / "runs.csv")
    assert sorted(runs["run_dir"]) == sorted(
        Path(d).relative_to(runs_folder.resolve()).as_posix() for d in report.runs["run_dir"]
    )
    assert "multiruns/2026-01-01_00-00-00-000000/0_lr0.1_s0" in set(runs["run_dir"])
    for path in report.files:
        if path.suffix != ".png":
            assert str(runs_folder) not in path.read_text(), path.name
    assert any(str(runs_folder) in w for w in report.warnings)


def test_curve_stats_equal_numpy_over_the_history_files(report: Report):
    histories = load_histories(report.runs)
    wide = [
        json.loads(line)
        for run_dir in report.runs.query("variant == 'wide' and status == 'completed'")["run_dir"]
        for line in (Path(run_dir) / "history.jsonl").read_text().splitlines()
    ]
    for band in ("std", "minmax"):
        stats = curve_stats(histories, "val/acc", band=band).query("variant == 'wide'")
        for epoch, row in stats.set_index("epoch").iterrows():
            values = [r["val/acc"] for r in wide if r["epoch"] == epoch]
            spread = np.std(values, ddof=1)
            low, high = (
                (np.mean(values) - spread, np.mean(values) + spread)
                if band == "std"
                else (min(values), max(values))
            )
            assert (row["mean"], row["lower"], row["upper"]) == pytest.approx(
                (np.mean(values), low, high)
            )
            assert row["n"] == len(values)


def test_band_and_metric_mistakes_are_report_errors(runs_folder: Path, tmp_path: Path):
    with pytest.raises(ReportError, match="band='iqr' is not valid; choose one of: std, minmax"):
        build_report(runs_folder, tmp_path, band="iqr")
    with pytest.raises(ReportError, match="unknown metric 'acc'"):
        build_report(runs_folder, tmp_path, ["acc"])


@pytest.mark.slow
def test_grad_norm_traces_are_drawn_per_step_with_diverged_runs(tmp_path: Path):
    """Runs that logged gradient norms (callbacks=grad_norm) get a per-step trace of the total
    norm, diverged runs included; the numbers behind it are the mean and std of the files."""
    from research.reports.build import GRAD_NORM_TOTAL
    from research.tracking.run_dir import GRAD_NORM_FILE
    from tests.reports.conftest import write_run

    traces = {}
    for job, (variant, seed, status) in enumerate(
        [("a", 0, "completed"), ("a", 1, "diverged"), ("b", 0, "completed"), ("b", 1, "failed")]
    ):
        run = tmp_path / "runs" / f"{job}_{variant}_s{seed}"
        write_run(run, seed, [f"seed={seed}", f"variant={variant}"], status, variant=variant)
        rows = [{"step": s, GRAD_NORM_TOTAL: float(job + 1 + s)} for s in range(3)]
        (run / GRAD_NORM_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
        traces[(variant, status)] = [r[GRAD_NORM_TOTAL] for r in rows]
    report = build_report(tmp_path / "runs", tmp_path / "out")
    plot = report.out_dir / "curve_grad_norm-total.png"
    assert plot in report.files and plot.read_bytes().startswith(PNG)
    assert (
        "![curve_grad_norm-total](curve_grad_norm-total.png)"
        in (report.out_dir / "report.md").read_text()
    )
    stats = curve_stats(
        load_histories(report.runs, ("completed", "diverged"), GRAD_NORM_FILE),
        GRAD_NORM_TOTAL,
        x="step",
    )
    a = stats[stats["variant"] == "a"]
    both = np.array([traces[("a", "completed")], traces[("a", "diverged")]])
    assert np.allclose(a["mean"], both.mean(0)) and np.allclose(
        a["upper"], both.mean(0) + both.std(0, ddof=1)
    )
    b = stats[stats["variant"] == "b"]  # the failed run is left out
    assert list(b["n"]) == [1, 1, 1] and np.allclose(b["mean"], traces[("b", "completed")])
