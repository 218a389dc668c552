"""Per-variant statistics against numpy, failure counts, bold best cells and metric directions."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from research.reports import (
    ReportError,
    RunsWarning,
    default_metrics,
    directions,
    format_mean_std,
    load_runs,
    resolve_metric,
    summarize,
    to_markdown,
)
from research.reports.metrics import is_share
from research.reports.stats import mean_interval
from research.utils.metric_names import direction_by_name
from tests.reports.conftest import (
    completed_values,
    expected_variant,
    read_metrics_files,
    write_run,
)

METRICS = ["final.test/acc", "final.test/loss", "best.val/acc"]


@pytest.fixture(scope="module")
def runs(runs_folder: Path) -> pd.DataFrame:
    with pytest.warns(RunsWarning):
        return load_runs(runs_folder)


def _table_rows(markdown: str) -> tuple[list[str], dict[str, list[str]]]:
    """The header cells and variant -> cells of a Markdown table."""
    lines = [ln for ln in markdown.splitlines() if ln.startswith("| ")]
    split = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines]
    return split[0], {cells[0]: cells for cells in split[1:]}


def test_mean_std_n_equal_numpy(runs: pd.DataFrame, runs_folder: Path):
    table = summarize(runs, METRICS)
    for metric in METRICS:
        for variant, values in completed_values(runs_folder, metric).items():
            assert table.loc[variant, f"{metric} mean"] == pytest.approx(np.mean(values))
            assert table.loc[variant, f"{metric} n"] == len(values)
            std = table.loc[variant, f"{metric} std"]
            if len(values) > 1:
                assert std == pytest.approx(np.std(values, ddof=1))
            else:
                assert math.isnan(std)


def test_failed_and_diverged_counts(runs: pd.DataFrame, runs_folder: Path):
    table = summarize(runs, METRICS)
    payloads = read_metrics_files(runs_folder)
    for variant in table.index:
        statuses = [p["status"] for p in payloads if expected_variant(p) == variant]
        # The corrupt and the killed run (no parseable metrics.json) are failed `wide` runs.
        unreadable = 2 if variant == "wide" else 0
        assert table.loc[variant, "n"] == statuses.count("completed")
        assert table.loc[variant, "failed"] == statuses.count("failed") + unreadable
        assert table.loc[variant, "diverged"] == statuses.count("diverged")
    assert table["diverged"].sum() == 1 and table["failed"].sum() == 3


def test_directions_from_names_and_explicit_choice(runs: pd.DataFrame):
    ways = directions(runs, METRICS)
    assert ways == {"final.test/acc": "max", "final.test/loss": "min", "best.val/acc": "max"}
    assert directions(runs, METRICS, {"test/acc": "min"})["final.test/acc"] == "min"
    with pytest.raises(ReportError, match="'sideways' for 'final.test/acc' is not valid"):
        directions(runs, METRICS, {"final.test/acc": "sideways"})
    with pytest.raises(ReportError, match="not in the table"):
        directions(runs, METRICS, {"final.val/loss": "min"})


def test_single_run_shows_no_std(runs: pd.DataFrame):
    table = summarize(runs, METRICS)
    _, rows = _table_rows(to_markdown(table, METRICS, directions(runs, METRICS)))
    single = table.loc["single", "final.test/acc mean"]
    assert rows["single"][4].strip("*") == f"{single:.4f} ± – (n=1)"
    assert rows["single"][1:4] == ["1", "0", "0"]


def test_monitor_mode_beats_the_name_and_unknown_gets_no_bold():
    runs = pd.DataFrame(
        {
            "variant": ["a", "b"],
            "status": ["completed", "completed"],
            "monitor": ["val/acc", "val/acc"],
            "mode": ["min", "min"],
            "best.val/acc": [0.1, 0.2],
            "final.val/score": [1.0, 2.0],
        }
    )
    metrics = ["best.val/acc", "final.val/score"]
    ways = directions(runs, metrics)
    assert ways == {"best.val/acc": "min", "final.val/score": None}
    markdown = to_markdown(summarize(runs, metrics), metrics, ways)
    assert "No bold for final.val/score" in markdown


@pytest.mark.parametrize(
    ("metric", "way"),
    [
        ("final.test/acc", "max"),
        ("best.val/acc_top3", "max"),
        ("final.test/ndcg@10", "max"),
        ("final.test/mrr", "max"),
        ("final.test/recall@100", "max"),
        ("final.test/f1_macro", "max"),
        ("final.val/loss", "min"),
        ("final.test/perplexity", "min"),
        ("final.test/ppl", "min"),
        ("final.test/ppl@1024", "min"),
        ("final.test/bpb@512", "min"),
        ("final.test/top1_error", "min"),
        ("final.lr-Adam", None),
        ("final.throughput/samples_per_s", "max"),
        ("final.throughput/mfu", "max"),
        ("final.throughput/flops_per_step", None),
    ],
)
def test_direction_by_name(metric: str, way: str | None):
    assert direction_by_name(metric) == way


@pytest.mark.parametrize(
    ("mean", "std", "text"),
    [
        (0.97123, 0.0123, "0.971 ± 0.012"),
        (123.456, 5.67, "123.5 ± 5.7"),
        (0.71875, math.nan, "0.7188 ± –"),
        (1234.5, 0.0, "1234 ± 0"),
        (math.nan, math.nan, "–"),
    ],
)
def test_mean_std_format(mean: float, std: float, text: str):
    assert format_mean_std(mean, std) == text


def test_a_negative_value_has_a_true_minus_sign():
    assert format_mean_std(-0.5, 0.1, -0.75, -0.25) == "−0.50 ± 0.10 [−0.75, −0.25]"


def test_every_interval_has_its_n_beside_it():
    assert format_mean_std(0.97123, 0.0123, 0.95, 0.99, n=3) == "0.971 ± 0.012 [0.950, 0.990] (n=3)"
    assert format_mean_std(0.71875, math.nan, n=1) == "0.7188 ± – (n=1)"


def test_default_and_named_metrics(runs: pd.DataFrame):
    assert default_metrics(runs) == ["final.test/acc", "final.test/loss", "best.val/acc"]
    assert resolve_metric(runs, "test/acc") == "final.test/acc"
    with pytest.raises(
        ReportError, match=r"unknown metric 'test/acc2'; available: .*final\.test/acc"
    ):
        resolve_metric(runs, "test/acc2")


def test_an_interrupted_run_gets_its_own_column_and_no_share_of_the_mean(tmp_path: Path):
    """A run stopped by a signal is neither a result nor a failure of the variant: it is counted
    apart (the column appears only when there is one) and left out of the mean."""
    for seed, status in ((0, "completed"), (1, "completed"), (2, "interrupted")):
        write_run(tmp_path / f"run{seed}", seed, ["optimizer.lr=0.1", f"seed={seed}"], status)
    runs = load_runs(tmp_path)
    table = summarize(runs, ["final.val/acc"])
    row = table.loc["optimizer.lr=0.1"]
    assert (row["n"], row["failed"], row["interrupted"]) == (2, 0, 1)
    done = runs[runs["status"] == "completed"]["final.val/acc"]
    assert row["final.val/acc mean"] == pytest.approx(done.mean())
    header, _ = _table_rows(to_markdown(table, ["final.val/acc"], {"final.val/acc": "max"}))
    assert header[:5] == ["variant", "n", "failed", "diverged", "interrupted"]
    completed_only = summarize(runs[runs["status"] == "completed"], ["final.val/acc"])
    assert "interrupted" not in completed_only.columns


def _two_seeds(metric: str, values: list[float]) -> pd.DataFrame:
    """One variant of two completed runs: at n=2 a 95% t-interval is ±12.7 standard errors."""
    return pd.DataFrame({"variant": ["a", "a"], "status": ["completed"] * 2, metric: values})


def test_the_interval_of_a_share_is_cut_to_0_and_1():
    table = summarize(_two_seeds("final.test/acc", [0.95, 0.99]), ["final.test/acc"])
    found = mean_interval([0.95, 0.99])
    assert found.high > 1 and found.low > 0  # Student's interval runs past 1 ...
    assert table.loc["a", "final.test/acc ci_high"] == 1.0  # ... which no mean can reach
    assert table.loc["a", "final.test/acc ci_low"] == pytest.approx(found.low)
    small = summarize(_two_seeds("final.test/recall@10", [0.01, 0.05]), ["final.test/recall@10"])
    assert small.loc["a", "final.test/recall@10 ci_low"] == 0.0
    acc = ["final.test/acc"]
    legend = to_markdown(table, acc, {"final.test/acc": "max"}, shares=acc)
    assert "The intervals of final.test/acc, shares whose mean lies in [0, 1], are cut" in legend
    within = summarize(_two_seeds("final.test/acc", [0.95, 0.951]), acc)
    assert "are cut" not in to_markdown(within, acc, {"final.test/acc": "max"}, shares=acc)


def test_an_interval_is_left_whole_where_the_range_is_not_known():
    percent = summarize(_two_seeds("final.test/acc", [95.0, 99.0]), ["final.test/acc"])
    assert percent.loc["a", "final.test/acc ci_high"] > 99.0  # accuracy kept in percent
    loss = summarize(_two_seeds("final.test/loss", [0.05, 0.5]), ["final.test/loss"])
    assert loss.loc["a", "final.test/loss ci_low"] < 0  # a loss may be negative


@pytest.mark.parametrize(
    ("metric", "values", "share"),
    [
        ("final.test/acc_top3", [0.9, 1.0], True),
        ("best.val/ndcg@10", [0.5], True),
        ("final.train/mfu", [0.3], True),
        ("final.test/acc", [0.9, 97.0], False),
        ("final.test/loss", [0.1], False),
        ("final.val/error_rate", [0.1], False),
        ("final.train/samples_per_s", [0.5], False),
    ],
)
def test_is_share(metric: str, values: list[float], share: bool):
    assert is_share(metric, pd.Series(values)) is share
