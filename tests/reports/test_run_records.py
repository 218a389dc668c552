"""Run records: one small JSON per run that a study commits, read back as a runs table equal to
what `load_runs` reads from the run dirs themselves."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

from research.reports.errors import ReportError
from research.reports.run_records import read_records, records_frame, write_records
from research.reports.runs import load_runs
from research.retrieval.metrics import write_per_query


@pytest.fixture(scope="module")
def recorded(runs_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("records")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_records(runs_folder, out)
    return out


def test_records_give_the_same_table_as_the_run_dirs(runs_folder: Path, recorded: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = load_runs(runs_folder)
    frame = records_frame(read_records(recorded))
    assert len(frame) == len(runs)
    key = ["variant", "seed", "status"]
    columns = [
        c for c in runs.columns if c.startswith(("final.", "best.")) and "checkpoint" not in c
    ]
    left = runs.sort_values(key, na_position="last").reset_index(drop=True)
    right = frame.sort_values(key, na_position="last").reset_index(drop=True)
    pd.testing.assert_frame_equal(
        left[key + columns], right[key + columns], check_dtype=False, check_like=True
    )


def test_runs_without_metrics_are_recorded_as_failed_not_dropped(recorded: Path):
    frame = records_frame(read_records(recorded))
    wide = frame[frame["variant"] == "wide"]
    # seeds 0, 1 completed; 2 failed; 3 corrupt metrics.json; 4 killed before writing any
    assert sorted(wide["status"]) == ["completed", "completed", "failed", "failed", "failed"]


def test_records_hold_no_machine_paths(recorded: Path, runs_folder: Path):
    for path in recorded.glob("*.json"):
        text = path.read_text()
        assert str(runs_folder) not in text and "checkpoints/best.ckpt" not in text
        record = json.loads(text)
        assert record["history"] or record["status"] != "completed"


def test_rewriting_removes_records_of_runs_that_are_gone(runs_folder: Path, tmp_path: Path):
    stale = tmp_path / "gone_s9.json"
    stale.write_text("{}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_records(runs_folder, tmp_path)
    assert not stale.exists()


def test_step_traces_keep_only_the_asked_keys(tmp_path: Path, runs_folder: Path):
    run = next(runs_folder.rglob("0_lr0.1_s0"))
    rows = [
        {"step": s, "epoch": 0, "grad_norm/layer_0/w": 1.0 / (s + 1), "grad_norm/layer_1/w": 2.0}
        for s in range(3)
    ]
    (run / "grad_norms.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_records(run.parent, tmp_path, ["grad_norm/layer_0/*"])
    finally:
        (run / "grad_norms.jsonl").unlink()
    traced = [r["traces"] for r in read_records(tmp_path) if r["traces"]]
    assert traced == [{"grad_norm/layer_0/w": [[0, 1.0], [1, 0.5], [2, 1 / 3]]}]


def test_per_query_scores_are_kept_for_the_asked_splits_only(tmp_path: Path, runs_folder: Path):
    run = next(runs_folder.rglob("0_lr0.1_s0"))
    scores = {"ndcg@10": {"q1": 1.0, "q2": 0.5}}
    write_per_query(run, "test", scores)
    write_per_query(run, "val", {"ndcg@10": {"q9": 0.0}})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_records(run.parent, tmp_path / "with", per_query_splits=["test"])
            write_records(run.parent, tmp_path / "without")
    finally:
        for split in ("test", "val"):
            (run / f"per_query_{split}.json").unlink()
    with_scores = [r for r in read_records(tmp_path / "with") if r.get("per_query")]
    assert [r["seed"] for r in with_scores] == [0]
    (mine,) = with_scores
    assert mine["per_query"] == {"test": scores}
    assert all("per_query" not in r for r in read_records(tmp_path / "without"))


def test_an_empty_folder_is_one_clear_error(tmp_path: Path):
    with pytest.raises(ReportError, match="no run records"):
        read_records(tmp_path)
