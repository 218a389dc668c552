"""Finding run dirs, reading them into rows, variants, unreadable runs and re-run attempts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from research.reports import ReportError, RunsWarning, load_histories, load_runs
from research.reports.runs import variant_of
from research.tracking.run_dir import METRICS_FILE, STARTED_FILE
from tests.reports.conftest import EPOCHS, expected_variant, readable_runs, write_run


def _load(folder: Path):
    with pytest.warns(RunsWarning):
        return load_runs(folder)


def test_one_row_per_run_dir_at_any_depth(runs_folder: Path):
    runs = _load(runs_folder)
    markers = {p.parent for name in (METRICS_FILE, STARTED_FILE) for p in runs_folder.rglob(name)}
    assert sorted(runs["run_dir"]) == sorted(str(p) for p in markers)


@pytest.mark.parametrize(
    ("metrics", "variant"),
    [
        ({"overrides": ["seed=1"]}, "default"),
        ({"overrides": []}, "default"),
        (
            {"overrides": ["b=2", "+a=1", "++seed=3", "logger=csv", "hydra.job.chdir=true"]},
            "a=1,b=2",
        ),
        ({"overrides": ["ckpt_path=last", "trainer.enable_progress_bar=False", "x=1"]}, "x=1"),
        ({"overrides": ["x=1", "seed=0"], "variant": "wide"}, "wide"),
        ({"overrides": ["variant=narrow", "seed=0"]}, "narrow"),
    ],
)
def test_variant_of(metrics: dict, variant: str):
    assert variant_of(metrics) == variant


def test_each_row_holds_its_variant_and_flattened_metrics(runs_folder: Path):
    runs = _load(runs_folder).set_index("run_dir")
    for run_dir, payload in readable_runs(runs_folder):
        row = runs.loc[str(run_dir)]
        assert row["variant"] == expected_variant(payload)  # ablation name, else overrides
        assert row["final.val/acc"] == payload["final"]["val/acc"]
        assert row["best.val/acc"] == payload["best"]["val/acc"]
        assert row["status"] == payload["status"] and row["seed"] == payload["seed"]
    assert "best.checkpoint" not in runs.columns  # not a number


def test_corrupt_and_killed_runs_warn_and_count_as_failed(runs_folder: Path):
    corrupt = next(runs_folder.rglob("4_wide_s3"))
    killed = next(runs_folder.rglob("5_wide_s4"))
    with pytest.warns(RunsWarning) as caught:
        runs = load_runs(runs_folder)
    messages = [str(w.message) for w in caught]
    assert any(str(corrupt / "metrics.json") in m for m in messages)
    assert any(str(killed / "metrics.json") in m and "killed" in m for m in messages)
    rows = runs.set_index("run_dir").loc[[str(corrupt), str(killed)]]
    assert list(rows["status"]) == ["failed", "failed"]
    assert list(rows["variant"]) == ["wide", "wide"]  # from .hydra/overrides.yaml
    assert list(rows["seed"]) == [3, 4]  # from the run id in the start marker


def test_a_rerun_counts_once_as_its_newest_completed_attempt(tmp_path: Path):
    first = write_run(tmp_path / "a" / "0_s0", 0, ["seed=0"], status="failed")
    second = tmp_path / "b" / "0_s0"
    write_run(second, 0, ["seed=0"])
    payload = json.loads((second / "metrics.json").read_text())
    payload.update(run_id=first["run_id"], config_hash=first["config_hash"])
    (second / "metrics.json").write_text(json.dumps(payload))
    os.utime(tmp_path / "a" / "0_s0" / "metrics.json", (1, 1))
    with pytest.warns(RunsWarning, match="superseded"):
        runs = load_runs(tmp_path)
    assert list(runs["run_dir"]) == [str(second)]
    assert list(runs["status"]) == ["completed"]


def test_histories_of_completed_runs_only(runs_folder: Path):
    runs = _load(runs_folder)
    histories = load_histories(runs)
    done = runs[runs["status"] == "completed"]
    assert set(histories["run_dir"]) == set(done["run_dir"])
    assert len(histories) == EPOCHS * len(done)
    assert {"variant", "seed", "epoch", "step", "val/acc"} <= set(histories.columns)


def test_empty_folder_and_missing_folder_are_errors(tmp_path: Path):
    with pytest.raises(ReportError, match="no runs under"):
        load_runs(tmp_path)
    with pytest.raises(ReportError, match="not a folder"):
        load_runs(tmp_path / "nope")


def test_names_relabel_a_reused_run_by_the_variant_that_now_has_its_config(tmp_path: Path):
    """research-ablate reuses a finished run for whichever variant now has its config; the
    run's metrics.json still names the variant it ran as."""
    old = write_run(tmp_path / "a", 0, ["loss.temperature=0.02"], variant="recipe")
    new = write_run(tmp_path / "b", 0, ["loss.temperature=1.0"], variant="recipe")
    with pytest.warns(RunsWarning, match="2 different configs"):
        split = load_runs(tmp_path)
    assert len(set(split["variant"])) == 2  # without names: one variant split in two
    names = {old["config_hash"]: "temperature0.02", new["config_hash"]: "recipe"}
    runs = load_runs(tmp_path, names=names)
    assert dict(zip(runs["config_hash"], runs["variant"], strict=True)) == names
