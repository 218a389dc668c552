"""Bootstrap CIs, paired comparisons with Holm-adjusted p-values, and what the tables bold."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from research.reports import comparison_markdown, comparisons, summarize, to_markdown
from research.reports.baseline import choose_baseline
from research.reports.errors import ReportError
from research.reports.stats import holm, mean_ci

SEEDS = range(5)


def _runs(offsets: dict[str, list[float]], metric: str = "final.test/acc") -> pd.DataFrame:
    """Runs whose value is a strong per-seed effect (shared by all variants) plus an offset."""
    seed_effect = [0.0, 0.03, -0.02, 0.05, -0.04]
    rows = [
        {"variant": v, "seed": s, "status": "completed", metric: 0.90 + seed_effect[s] + off[s]}
        for v, off in offsets.items()
        for s in SEEDS
    ]
    return pd.DataFrame(rows)


def _bold(markdown: str, column: int) -> list[str]:
    lines = [ln for ln in markdown.split("\n\n")[0].splitlines()[2:]]
    cells = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines]
    return [c[0] for c in cells if c[column].startswith("**")]


def test_mean_ci_brackets_the_mean_within_the_data():
    values = [0.981, 0.987, 0.992, 0.978, 0.99]
    low, high = mean_ci(values)
    assert min(values) <= low < np.mean(values) < high <= max(values)
    assert mean_ci([0.5]) == (pytest.approx(math.nan, nan_ok=True),) * 2
    assert mean_ci([0.7, 0.7]) == (0.7, 0.7)
    losses = [0.01, 0.02, 0.4]
    assert mean_ci(losses)[0] > 0  # a loss's CI never goes below 0


def test_holm_matches_the_step_down_rule():
    # sorted 0.01, 0.03, 0.04 of m=3: 0.03, max(0.03, 0.06), max(0.06, 0.04) -> 0.06
    assert holm([0.04, 0.01, 0.03, math.nan])[:3] == pytest.approx([0.06, 0.03, 0.06])
    assert math.isnan(holm([0.04, 0.01, 0.03, math.nan])[3])
    assert holm([0.9, 0.3]) == pytest.approx([0.9, 0.6])


def test_pairing_by_seed_sees_what_an_unpaired_test_cannot():
    runs = _runs({"base": [0.0] * 5, "plus": [0.010, 0.012, 0.009, 0.011, 0.010]})
    (paired,) = comparisons(
        runs, ["final.test/acc"], {"final.test/acc": "max"}, "base", ["base", "plus"]
    )["final.test/acc"]
    assert paired.paired and paired.n == 5
    assert paired.diff == pytest.approx(0.0104)
    expected = scipy_stats.ttest_rel(
        runs[runs.variant == "plus"]["final.test/acc"],
        runs[runs.variant == "base"]["final.test/acc"],
    )
    assert paired.p == pytest.approx(expected.pvalue)
    assert 0 < paired.low < paired.diff < paired.high and paired.verdict == "better"
    # The same values without matching seeds: Welch's test, lost in the seed effect.
    unpaired_runs = runs.assign(
        seed=[s + (10 if v == "plus" else 0) for v, s in zip(runs.variant, runs.seed, strict=True)]
    )
    (unpaired,) = comparisons(
        unpaired_runs, ["final.test/acc"], {"final.test/acc": "max"}, "base", ["base", "plus"]
    )["final.test/acc"]
    assert not unpaired.paired and unpaired.verdict == "noise"
    assert unpaired.low < 0 < unpaired.high


def test_bold_only_beyond_noise_and_holm_across_variants():
    runs = _runs(
        {
            "base": [0.0] * 5,
            "good": [0.010, 0.012, 0.009, 0.011, 0.010],
            "tie": [0.001, -0.002, 0.002, -0.001, 0.0005],
            "bad": [-0.010, -0.012, -0.009, -0.011, -0.010],
        }
    )
    metric, ways = "final.test/acc", {"final.test/acc": "max"}
    variants = ["bad", "base", "good", "tie"]
    found = comparisons(runs, [metric], ways, "base", variants)
    verdicts = {c.variant: c.verdict for c in found[metric]}
    assert verdicts == {"bad": "worse", "good": "better", "tie": "noise"}
    raw = [c.p for c in found[metric]]
    assert [c.p_holm for c in found[metric]] == pytest.approx(holm(raw))
    table = summarize(runs, [metric])
    markdown = to_markdown(table, [metric], ways, found, "base")
    assert _bold(markdown, 4) == ["good"]  # "tie" has the best mean of the rest, not bold
    assert "base (baseline)" in markdown
    text = comparison_markdown(found, "base")
    assert "- final.test/acc: better than `base`: good; worse than `base`: bad" in text
    # The other direction turns the verdicts round.
    flipped = comparisons(runs, [metric], {metric: "min"}, "base", variants)
    assert _bold(to_markdown(table, [metric], {metric: "min"}, flipped, "base"), 4) == ["bad"]


def test_a_table_within_noise_says_so_and_bolds_nothing():
    rng = np.random.default_rng(1)
    runs = _runs({v: list(rng.normal(0, 0.004, 5)) for v in ("base", "a", "b", "c")})
    metric = "final.test/acc"
    found = comparisons(runs, [metric], {metric: "max"}, "base", ["a", "b", "base", "c"])
    markdown = to_markdown(summarize(runs, [metric]), [metric], {metric: "max"}, found, "base")
    assert _bold(markdown, 4) == []
    assert "- final.test/acc: every variant is within noise of the baseline `base`." in (
        comparison_markdown(found, "base")
    )


def test_per_variant_ci_is_in_the_table_and_the_csv_columns():
    runs = _runs({"base": [0.0] * 5, "good": [0.01] * 5})
    table = summarize(runs, ["final.test/acc"])
    values = runs[runs.variant == "good"]["final.test/acc"]
    assert (
        table.loc["good", "final.test/acc ci_low"],
        table.loc["good", "final.test/acc ci_high"],
    ) == (
        pytest.approx(mean_ci(values)[0]),
        pytest.approx(mean_ci(values)[1]),
    )
    low = table.loc["good", "final.test/acc ci_low"]
    assert f"[{low:.3f}, " in to_markdown(table, ["final.test/acc"], {"final.test/acc": "max"})


def test_baseline_choice_and_its_error():
    assert choose_baseline(["a", "b"], None, None) == "a"
    assert choose_baseline(["default", "b"], None, None) == "default"
    assert choose_baseline(["a", "b"], None, "b") == "b"
    assert choose_baseline(["a", "b"], "a", "b") == "a"
    assert choose_baseline(["a"], None, None) is None
    with pytest.raises(
        ReportError, match=r"--baseline 'c' is not a variant of these runs; variants: a, b"
    ):
        choose_baseline(["a", "b"], "c", None)
