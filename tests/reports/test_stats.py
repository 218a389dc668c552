"""Student-t intervals, paired comparisons with Holm-adjusted p-values, what the tables bold,
and what they refuse to claim (too few seeds, no spread)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from research.reports import comparison_markdown, comparisons, summarize, to_markdown
from research.reports.baseline import choose_baseline
from research.reports.errors import ReportError
from research.reports.stats import holm, mean_interval

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


def test_mean_interval_is_students_t_with_its_n():
    values = [0.981, 0.987, 0.992, 0.978, 0.99]
    found = mean_interval(values)
    expected = scipy_stats.t.interval(
        0.95, len(values) - 1, loc=np.mean(values), scale=scipy_stats.sem(values)
    )
    assert (found.low, found.high) == pytest.approx(expected)
    assert found.mean == pytest.approx(np.mean(values)) and found.n == 5
    # Three seeds: wider than their min-max, which a percentile bootstrap is close to.
    three = mean_interval([0.90, 0.92, 0.97])
    assert three.low < 0.90 and three.high > 0.97
    one = mean_interval([0.5, math.nan])
    assert one.n == 1 and math.isnan(one.low) and math.isnan(one.high)
    # Equal values (also equal up to float round-off) have no spread to build an interval on.
    for flat in ([0.7, 0.7], [0.9556 - 0.9, 0.8556 - 0.8, 0.7556 - 0.7]):
        assert math.isnan(mean_interval(flat).low) and math.isnan(mean_interval(flat).high)


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
    d = (
        runs[runs.variant == "plus"]["final.test/acc"].to_numpy()
        - runs[runs.variant == "base"]["final.test/acc"].to_numpy()
    )
    assert (paired.low, paired.high) == pytest.approx(
        scipy_stats.t.interval(0.95, 4, loc=d.mean(), scale=scipy_stats.sem(d))
    )
    # The same values without matching seeds: Welch's test, lost in the seed effect.
    unpaired_runs = runs.assign(
        seed=[s + (10 if v == "plus" else 0) for v, s in zip(runs.variant, runs.seed, strict=True)]
    )
    (unpaired,) = comparisons(
        unpaired_runs, ["final.test/acc"], {"final.test/acc": "max"}, "base", ["base", "plus"]
    )["final.test/acc"]
    assert not unpaired.paired and unpaired.verdict == "noise"
    assert unpaired.low < 0 < unpaired.high
    welch = scipy_stats.ttest_ind(
        runs[runs.variant == "plus"]["final.test/acc"],
        runs[runs.variant == "base"]["final.test/acc"],
        equal_var=False,
    )
    assert unpaired.p == pytest.approx(welch.pvalue)
    assert (unpaired.low, unpaired.high) == pytest.approx(tuple(welch.confidence_interval(0.95)))


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


def test_per_variant_interval_is_in_the_table_with_its_n_and_in_the_csv_columns():
    runs = _runs({"base": [0.0] * 5, "good": [0.01] * 5})
    table = summarize(runs, ["final.test/acc"])
    values = runs[runs.variant == "good"]["final.test/acc"]
    assert (
        table.loc["good", "final.test/acc ci_low"],
        table.loc["good", "final.test/acc ci_high"],
    ) == pytest.approx(mean_interval(values)[1:3])
    low, high = table.loc["good", ["final.test/acc ci_low", "final.test/acc ci_high"]]
    markdown = to_markdown(table, ["final.test/acc"], {"final.test/acc": "max"})
    assert f"[{low:.3f}, {high:.3f}] (n=5)" in markdown
    assert "Student-t interval" in markdown and "bootstrap" not in markdown


def _two_variants(base: list[float], plus: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"variant": v, "seed": s, "status": "completed", "final.test/acc": x}
            for v, values in (("base", base), ("plus", plus))
            for s, x in enumerate(values)
        ]
    )


@pytest.mark.parametrize(
    ("base", "plus", "note"),
    [
        # The 2 x 2 ablation: both paired differences +0.0556.
        ([0.9, 0.8], [0.9556, 0.8556], "n=2: too few seeds to tell"),
        # Two seeds and a clear difference: still too few to make a claim.
        ([0.90, 0.80], [0.95, 0.86], "n=2: too few seeds to tell"),
        # Three seeds whose differences are equal up to float round-off: no spread, no test.
        ([0.9, 0.8, 0.7], [0.9556, 0.8556, 0.7556], "the differences are all equal"),
        ([0.9, 0.8, 0.7], [0.9, 0.8, 0.7], "the differences are all equal"),
    ],
)
def test_no_p_and_no_claim_from_too_few_seeds_or_no_spread(base, plus, note):
    runs = _two_variants(base, plus)
    metric, ways = "final.test/acc", {"final.test/acc": "max"}
    found = comparisons(runs, [metric], ways, "base", ["base", "plus"])
    (c,) = found[metric]
    assert c.paired and math.isnan(c.p) and math.isnan(c.p_holm)  # never p = 0
    assert c.verdict == "undecided" and c.note.startswith(note)
    assert _bold(to_markdown(summarize(runs, [metric]), [metric], ways, found, "base"), 4) == []
    text = comparison_markdown(found, "base")
    assert "**" not in text.split("\n\n")[1]  # no bold Δ
    assert "p=– |" in text
    assert f"- {metric}: cannot tell: plus ({c.note})." in text.splitlines()  # nothing else


def test_untested_comparisons_stay_out_of_the_holm_family():
    """A variant with 2 seeds gets no test, so it does not make the tested one pay for it."""
    runs = _runs({"base": [0.0] * 5, "good": [0.010, 0.012, 0.009, 0.011, 0.010]})
    two = runs[runs.variant == "good"].head(2).assign(variant="two")
    runs = pd.concat([runs, two], ignore_index=True)
    metric = "final.test/acc"
    found = comparisons(runs, [metric], {metric: "max"}, "base", ["base", "good", "two"])
    good, two_seeds = found[metric]
    assert two_seeds.verdict == "undecided" and two_seeds.note == "n=2: too few seeds to tell"
    assert two_seeds.paired and two_seeds.n == 2  # on the 2 seeds it shares with the baseline
    assert good.p_holm == good.p and good.verdict == "better"
    text = comparison_markdown(found, "base")
    assert "- final.test/acc: better than `base`: good; cannot tell: two (n=2: too few seeds" in (
        text
    )


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


def test_a_variant_stopped_early_is_paired_on_the_seeds_it_shares():
    """--until-decided stops a variant at 5 seeds while the baseline goes on to 10: the
    comparison pairs the 5 shared seeds instead of falling back to Welch's test."""
    metric = "final.test/acc"
    base = [0.50, 0.60, 0.55, 0.65, 0.52, 0.58, 0.61, 0.49, 0.57, 0.63]
    plus = [0.512, 0.609, 0.561, 0.661, 0.529]  # the seed effect plus about 0.01
    rows = [("base", s, v) for s, v in enumerate(base)] + [
        ("plus", s, v) for s, v in enumerate(plus)
    ]
    runs = pd.DataFrame(
        [{"variant": n, "seed": s, "status": "completed", metric: v} for n, s, v in rows]
    )
    (c,) = comparisons(runs, [metric], {metric: "max"}, "base", ["base", "plus"])[metric]
    assert c.paired and c.n == 5
    assert c.diff == pytest.approx(0.0104) and c.verdict == "better"  # Welch's would lose it
