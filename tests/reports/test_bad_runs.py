"""One bad run dir never stops a report: it is flagged (a warning naming its dir and what is
wrong, in report.md and as one stderr line) and the other runs are reported as if it were not
there; with no usable run left the report is still written and the exit status is 1."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from research.cli.report import main
from research.reports import RunsWarning, build_report, load_runs
from tests.reports.conftest import write_run

METRIC = "final.test/acc"


def _good_runs(root: Path) -> dict[str, float]:
    """Two variants x 3 seeds; variant -> the mean of its test/acc."""
    means = {}
    for lr in ("0.1", "0.01"):
        values = [
            write_run(root / f"lr{lr}_s{seed}", seed, [f"optimizer.lr={lr}", f"seed={seed}"])[
                "final"
            ]["test/acc"]
            for seed in range(3)
        ]
        means[f"optimizer.lr={lr}"] = sum(values) / len(values)
    return means


def _edit(run_dir: Path, change: Callable[[dict[str, Any]], None]) -> None:
    payload = json.loads((run_dir / "metrics.json").read_text())
    change(payload)
    (run_dir / "metrics.json").write_text(json.dumps(payload))  # inf/nan as JSON's Infinity/NaN


def _set(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda payload: payload.update(fields)


def _set_metric(part: str, name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda payload: payload[part].update({name: value})


# name -> (how its metrics.json is spoiled, words the warning must hold)
BAD: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "inf_metric": (_set_metric("final", "test/acc", math.inf), "final.test/acc = inf"),
    "nan_metric": (_set_metric("final", "test/acc", math.nan), "final.test/acc = nan"),
    "minus_inf_best": (_set_metric("best", "val/acc", -math.inf), "best.val/acc = -inf"),
    "huge_int_metric": (_set_metric("final", "test/acc", 10**400), "not a finite number"),
    "seed_overflow": (_set(seed=2**70), "seed 1180591620717411303424 is outside"),
    "seed_float": (_set(seed=1.5), "seed 1.5 is not an integer"),
    "seed_text": (_set(seed="three"), "seed 'three' is not an integer"),
    "seed_bool": (_set(seed=True), "seed True is not an integer"),
    "no_config": (lambda payload: payload.pop("config"), "no config"),
    "final_list": (_set(final=[0.5]), "final is not a mapping"),
    "run_id_dict": (_set(run_id={"a": 1}), "run_id {'a': 1} is not a string"),
    "monitor_list": (_set(monitor=["val/acc"]), "monitor ['val/acc'] is not a string"),
    "overrides_text": (_set(overrides="seed=1"), "overrides is not a list of strings"),
    "wall_time_text": (_set(wall_time_s="1 s"), "wall_time_s '1 s' is not a finite number"),
}
# name -> what the file holds instead of a JSON object
UNREADABLE = {
    "truncated": '{"status": "completed", "final": {',
    "not_json": "status: completed\n",
    "not_a_mapping": "[1, 2, 3]",
    "nested_too_deep": "[" * 100_000,
    "not_utf8": "\udcff",  # written as a lone 0xff byte below
}


def _write_unreadable(run_dir: Path, text: str, seed: int = 9) -> None:
    write_run(run_dir, seed, ["optimizer.lr=0.1", f"seed={seed}"])
    data = b"\xff{" if text == "\udcff" else text.encode()
    (run_dir / "metrics.json").write_bytes(data)


@pytest.mark.slow  # a report per bad value: about 1 s each, 14 of them
@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_value_is_flagged_and_left_out_and_the_rest_reported(tmp_path: Path, name: str):
    means = _good_runs(tmp_path)
    bad = tmp_path / name
    write_run(bad, 7, ["optimizer.lr=0.1", "seed=7"])
    spoil, words = BAD[name]
    _edit(bad, spoil)
    report = build_report(tmp_path, tmp_path / "out", [METRIC])
    flagged = [w for w in report.warnings if w.startswith(f"{bad}:")]
    assert len(flagged) == 1 and words in flagged[0], report.warnings
    # report.md names the run relative to the folder it describes
    assert (
        f"- {flagged[0].replace(f'{tmp_path}/', '')}"
        in (tmp_path / "out" / "report.md").read_text()
    )
    runs = report.runs.set_index("run_dir")
    assert len(runs) == 7 and runs.loc[str(bad), "status"] == "completed"
    assert report.table.loc["optimizer.lr=0.01", f"{METRIC} mean"] == pytest.approx(
        means["optimizer.lr=0.01"]
    )
    lr01 = report.table.loc["optimizer.lr=0.1"]
    if "metric" in name:  # the bad value is left out of the mean, the run's other values stay
        assert lr01[f"{METRIC} mean"] == pytest.approx(means["optimizer.lr=0.1"])
        assert (lr01["n"], lr01[f"{METRIC} n"]) == (4, 3)
    if name.startswith("seed"):
        assert pd.isna(runs.loc[str(bad), "seed"]) and runs["seed"].isna().sum() == 1


def test_a_metrics_json_nested_too_deep_to_parse_counts_as_failed(tmp_path: Path):
    """json raises RecursionError, not ValueError, on it."""
    _good_runs(tmp_path)
    _write_unreadable(tmp_path / "deep", UNREADABLE["nested_too_deep"])
    with pytest.warns(RunsWarning, match="not a readable JSON object"):
        runs = load_runs(tmp_path).set_index("run_dir")
    assert runs.loc[str(tmp_path / "deep"), "status"] == "failed"
    assert (runs["status"] == "completed").sum() == 6


@pytest.mark.slow
def test_the_cli_flags_each_bad_run_in_one_line_and_exits_0(tmp_path: Path, capsys):
    _good_runs(tmp_path / "runs")
    bad_dirs = []
    for i, (name, (spoil, _)) in enumerate(BAD.items()):
        bad_dirs.append(tmp_path / "runs" / name)
        write_run(bad_dirs[-1], 10 + i, ["optimizer.lr=0.1", f"seed={10 + i}"])
        _edit(bad_dirs[-1], spoil)
    for i, (name, text) in enumerate(UNREADABLE.items()):
        bad_dirs.append(tmp_path / "runs" / name)
        _write_unreadable(bad_dirs[-1], text, seed=50 + i)
    assert main([str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("| variant |")
    warned = [ln for ln in captured.err.splitlines() if ln.startswith("research-report: warning")]
    for run_dir in bad_dirs:  # exactly one line per bad run, naming it
        names = [f" {run_dir}:", f" {run_dir / 'metrics.json'}:"]
        assert len([ln for ln in warned if any(n in ln for n in names)]) == 1, run_dir
    assert len(warned) == len(bad_dirs)
    assert "research-report: error" not in captured.err


def test_no_usable_run_still_writes_the_report_and_exits_1(tmp_path: Path, capsys):
    """Every run diverged, failed or could not be read: the table holds no value."""
    for seed, status in enumerate(("diverged", "diverged", "failed")):
        write_run(tmp_path / "runs" / f"s{seed}", seed, [f"seed={seed}"], status=status)
    _write_unreadable(tmp_path / "runs" / "cut", UNREADABLE["truncated"])
    out = tmp_path / "out"
    assert main([str(tmp_path / "runs"), "--out", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"research-report: error: no run under {tmp_path / 'runs'} completed with a value to "
        f"report (4 runs; see {out / 'report.md'})"
    )
    assert (out / "report.md").is_file() and (out / "runs.csv").is_file()


@pytest.mark.slow
def test_two_runs_of_one_seed_in_a_variant_are_compared_unpaired(tmp_path: Path):
    """A second run of seed 0 (another run id, e.g. a copied dir) leaves no one-to-one pairing
    by seed: the comparison is unpaired instead of an error."""
    _good_runs(tmp_path)
    twin = tmp_path / "twin"
    write_run(twin, 0, ["optimizer.lr=0.1", "seed=0"])
    _edit(twin, _set(run_id="0123456789ab-s0"))
    report = build_report(tmp_path, tmp_path / "out", [METRIC], baseline="optimizer.lr=0.01")
    (comparison,) = report.comparisons[METRIC]
    assert not comparison.paired and comparison.n == 3
