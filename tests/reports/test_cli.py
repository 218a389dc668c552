"""research-report: exit codes, one-line errors, ablation lookup, --wandb offline, no torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from research.cli.report import main
from research.tracking.wandb_reader import read_offline_run
from tests.helpers.cli import wandb_written
from tests.reports.conftest import write_run


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("research-report: error: ")
    return err


@pytest.mark.slow
def test_prints_the_table_and_writes_the_report(runs_folder: Path, tmp_path: Path, capsys):
    assert main([str(runs_folder), "--out", str(tmp_path / "out"), "--metric", "test/acc"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("| variant | n | failed | diverged | final.test/acc ↑ |\n")
    assert captured.out in (tmp_path / "out" / "report.md").read_text()
    assert "research-report: warning: " in captured.err and "4_wide_s3" in captured.err


@pytest.mark.slow
def test_default_out_is_inside_the_source(tmp_path: Path, capsys):
    write_run(tmp_path / "runs" / "0", 0, ["seed=0"])
    assert main([str(tmp_path / "runs")]) == 0
    assert (tmp_path / "runs" / "report" / "report.md").is_file()
    assert "| default | 1 | 0 | 0 |" in capsys.readouterr().out


def test_missing_source_says_what_was_looked_for(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RESEARCH_LOG_DIR", raising=False)
    monkeypatch.setenv("RESEARCH_ROOT", str(tmp_path))
    assert main(["nope"]) == 2
    err = _error_line(capsys)
    assert f"no folder {tmp_path / 'nope'}" in err
    assert f"no ablation folder {tmp_path / 'logs' / 'ablations' / 'nope'}" in err


def test_no_runs_and_unknown_metric_are_one_line_errors(runs_folder: Path, tmp_path: Path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "no runs under" in _error_line(capsys)
    assert main([str(runs_folder), "--out", str(tmp_path / "o"), "--metric", "test/acc2"]) == 2
    err = _error_line(capsys)
    assert "unknown metric 'test/acc2'; available: " in err and "final.test/acc," in err
    assert main([str(runs_folder), "--out", str(tmp_path / "o"), "--direction", "x=up"]) == 2
    assert "unknown metric 'x'" in _error_line(capsys)


def test_an_out_that_is_a_file_or_cannot_be_made_is_one_line(
    runs_folder: Path, tmp_path: Path, capsys
):
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    assert main([str(runs_folder), "--out", str(taken)]) == 2
    assert f"--out {taken} is a file; give a folder (made if missing)" in _error_line(capsys)
    assert taken.read_text() == "mine"
    below = taken / "report"  # a folder inside a file: mkdir fails with ENOTDIR
    assert main([str(runs_folder), "--out", str(below)]) == 2
    assert f"--out {below}: cannot make the folder: Not a directory" in _error_line(capsys)


@pytest.mark.slow
def test_baseline_and_where_options(runs_folder: Path, tmp_path: Path, capsys):
    out = ["--out", str(tmp_path / "o"), "--metric", "test/acc"]
    assert main([str(runs_folder), *out, "--baseline", "wide", "--where", "seed=0"]) == 0
    table = capsys.readouterr().out
    assert "| wide (baseline) | 1 | 0 | 0 |" in table and "Against the baseline `wide`" in table
    assert main([str(runs_folder), *out, "--baseline", "narrow"]) == 2
    assert "--baseline 'narrow' is not a variant of these runs; variants: " in _error_line(capsys)
    assert main([str(runs_folder), *out, "--where", "seed=9"]) == 2
    assert "--where seed=9 matches no run; its values: " in _error_line(capsys)


def test_usage_errors_exit_2(runs_folder: Path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(runs_folder), "--band", "iqr"])
    assert exit_info.value.code == 2


@pytest.mark.slow
def test_an_ablation_name_is_looked_up_in_the_log_dir(
    runs_folder: Path, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("RESEARCH_LOG_DIR", str(runs_folder))
    monkeypatch.chdir(tmp_path)
    assert main(["widths", "--out", str(tmp_path / "out")]) == 0
    first_table = capsys.readouterr().out.split("\n\n")[0]
    rows = [ln.split(" | ")[0] for ln in first_table.splitlines()[2:] if ln.startswith("|")]
    assert rows == ["| single (baseline)", "| wide"]


@pytest.mark.slow  # starts W&B: about 3 s
def test_wandb_offline_logs_the_table(runs_folder: Path, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "out"
    assert main([str(runs_folder), "--out", str(out), "--wandb"]) == 0
    err = capsys.readouterr().err
    wandb_written()
    run_dir = next((out / "wandb").glob("offline-run-*"))
    assert f"wandb: offline run saved in {run_dir}; upload it with: wandb sync {run_dir}" in err
    run = read_offline_run(run_dir)
    assert (run.group, run.job_type, run.project) == ("grp", "report", "proj")
    table = json.loads((run_dir / "files" / run.summary["report"]["path"]).read_text())
    csv_header = (out / "report.csv").read_text().splitlines()[0]
    assert ",".join(table["columns"]) == csv_header.replace('"', "")
    assert [row[0] for row in table["data"]] == [
        "debug=limit,optimizer.lr=0.01",
        "debug=limit,optimizer.lr=0.1",
        "single",
        "wide",
    ]
    # the intervals and n of every cell, as in report.csv
    path = run_dir / "files" / run.summary["intervals"]["path"]
    cells = json.loads(path.read_text())
    rows = [dict(zip(cells["columns"], r, strict=True)) for r in cells["data"]]
    report = pd.read_csv(out / "report.csv", index_col="variant")
    metric = "final.test/acc"
    picked = [r for r in rows if r["metric"] == metric]
    assert len(picked) == len(report)  # one row per variant
    for row in picked:
        expected = report.loc[row["variant"], [f"{metric} {k}" for k in ("n", "ci_low", "ci_high")]]
        got = [float("nan") if v is None else v for v in (row["n"], row["low"], row["high"])]
        assert got == pytest.approx(list(expected.astype(float)), nan_ok=True)
    assert {"diff", "diff_low", "diff_high", "diff_n", "bold"} <= set(cells["columns"])


@pytest.mark.slow  # starts W&B twice: about 2.5 s
def test_wandb_logs_a_run_of_its_own_beside_one_the_caller_has_open(
    runs_folder: Path, tmp_path: Path, monkeypatch, capsys
):
    """From Python (a notebook) with a run open: the report neither logs into that run nor
    finishes it."""
    import wandb

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "mine").mkdir()
    mine = wandb.init(mode="offline", dir=str(tmp_path / "mine"), project="mine", job_type="x")
    try:
        assert main([str(runs_folder), "--out", str(tmp_path / "out"), "--wandb"]) == 0
        mine.log({"after": 1.0})  # still open: a finished run refuses to log
    finally:
        mine.finish()
        wandb_written()
    report = read_offline_run(tmp_path / "out")
    assert (report.project, report.job_type) == ("proj", "report") and "report" in report.summary
    logged = read_offline_run(tmp_path / "mine")
    assert "report" not in logged.summary and logged.summary["after"] == 1.0


@pytest.mark.slow  # a fresh interpreter's report: about 5 s
def test_cli_path_imports_neither_torch_nor_lightning(runs_folder: Path, tmp_path: Path):
    code = (
        "import sys; from research.cli.report import main; rc = main(sys.argv[1:]); "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning')); "
        "print('HEAVY', heavy); sys.exit(rc)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(runs_folder), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout


@pytest.mark.slow  # an ablation run first: about 9 s
def test_variant_names_come_from_the_ablation_file_without_torch(tmp_path: Path):
    """Each variant's config hash, as research-ablate computes it, for the ablation's own
    folder only; composing the configs must not import torch."""
    code = (
        "import json, sys; from pathlib import Path; "
        "from research.reports.source import ablation_spec, variant_names; "
        "spec = ablation_spec('cnn_sgd_momentum'); "
        "names = variant_names('cnn_sgd_momentum', spec, Path(sys.argv[1]) / 'cnn_sgd_momentum'); "
        "other = variant_names('cnn_sgd_momentum', spec, Path(sys.argv[1]) / 'elsewhere'); "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning')); "
        "print(json.dumps([names, other, heavy]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RESEARCH_LOG_DIR": str(tmp_path), "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr
    names, other, heavy = json.loads(done.stdout.splitlines()[-1])
    assert other == {} and heavy == []
    assert sorted(names.values()) == sorted(  # one config hash per variant
        f"{o}+{n}" for o in ("sgd", "momentum", "nesterov") for n in ("norm", "raw")
    )
    assert all(len(h) == 12 and all(c in "0123456789abcdef" for c in h) for h in names)
