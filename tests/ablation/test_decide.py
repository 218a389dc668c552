"""The stopping logic of `research-ablate --until-decided`: which variants get more seeds, when
one is decided, and the seed budget."""

from __future__ import annotations

import pytest

from research.ablation.decide import Rule, choose_metric, judge, next_counts, seed_sequence
from research.config.errors import ConfigError

RULE = Rule("final.test/acc", "max", 0.05, 2, margin=0.01, max_seeds=6)
CONFIG = {"callbacks": {"model_checkpoint": {"monitor": "val/acc", "mode": "max"}}}


def test_new_seeds_are_the_next_integers_after_the_files():
    assert seed_sequence([0, 1, 2], 6) == [0, 1, 2, 3, 4, 5]
    assert seed_sequence([7, 3], 4) == [7, 3, 8, 9]
    assert seed_sequence([0, 1, 2], 3) == [0, 1, 2]
    with pytest.raises(ConfigError, match="--max-seeds 2 is fewer than the ablation's 3 seeds"):
        seed_sequence([0, 1, 2], 2)
    with pytest.raises(ConfigError, match="would pass 4294967295"):
        seed_sequence([2**32 - 2], 3)


def test_a_clear_difference_is_better_or_worse_by_the_metrics_direction():
    diffs = [0.050, 0.056, 0.047, 0.052, 0.049]
    up = judge("v", [0, 1, 2, 3, 4], diffs, RULE)
    assert (up.decision, up.final) == ("better", True)
    assert 0 < up.low < up.mean < up.high
    down = judge("v", [0, 1, 2, 3, 4], diffs, Rule("final.test/loss", "min", 0.05, 2, None, 6))
    assert (down.decision, down.final) == ("worse", True)


def test_a_tight_interval_inside_the_margin_is_equivalent_and_without_a_margin_undecided():
    diffs = [0.001, -0.001, 0.0005, -0.0008, 0.0002, 0.0003]
    same = judge("v", list(range(6)), diffs, RULE)
    assert (same.decision, same.final) == ("equivalent", True)
    assert -0.01 < same.low < 0 < same.high < 0.01
    no_margin = Rule("final.test/acc", "max", 0.05, 2, None, 6)
    assert judge("v", list(range(6)), diffs, no_margin).decision == "undecided"


def test_noise_too_few_seeds_or_no_spread_stays_undecided():
    noisy = judge("v", [0, 1, 2], [0.02, -0.03, 0.04], RULE)
    assert (noisy.decision, noisy.final) == ("undecided", False)
    assert judge("v", [0], [0.05], RULE).reason == "fewer than 2 paired seeds"
    # The case: equal paired differences are not infinitely sure, they are no evidence
    # about the noise at all.
    flat = judge("v", [0, 1, 2, 3], [0.0556] * 4, RULE)
    assert (flat.decision, flat.reason) == ("undecided", "the differences have no spread")


def test_only_undecided_variants_get_another_batch_until_the_budget():
    verdicts = {
        "decided": judge("decided", [0, 1, 2, 3, 4], [0.05, 0.056, 0.047, 0.052, 0.049], RULE),
        "open": judge("open", [0, 1, 2, 3, 4], [0.02, -0.03, 0.04, 0.0, 0.01], RULE),
        "near_budget": judge("near_budget", [0, 1, 2, 3, 4], [0.02, -0.03, 0.04, 0.0, 0.01], RULE),
        "at_budget": judge("at_budget", list(range(6)), [0.02, -0.03, 0.04, 0, 0.01, 0], RULE),
    }
    counts = {"decided": 5, "open": 3, "near_budget": 5, "at_budget": 6}
    grown = next_counts(counts, verdicts, RULE, batch=2)
    assert grown == {"decided": 5, "open": 5, "near_budget": 6, "at_budget": 6}
    assert [v for v, verdict in verdicts.items() if verdict.final] == ["decided", "at_budget"]
    assert verdicts["at_budget"].decision == "undecided"
    assert verdicts["at_budget"].reason.endswith("seed budget of 6 reached")


def test_bonferroni_level_per_variant():
    assert Rule("m", "max", 0.05, 5, None, 10).level == pytest.approx(0.01)


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        (None, ("final.test/acc", "max")),  # the monitored metric's test value
        ("test/acc", ("final.test/acc", "max")),
        ("best.val/acc", ("best.val/acc", "max")),
        ("test/loss=min", ("final.test/loss", "min")),
    ],
)
def test_the_metric_and_its_direction(asked, expected):
    assert choose_metric(asked, CONFIG) == expected


def test_a_metric_of_unknown_direction_asks_for_one():
    with pytest.raises(ConfigError, match="give --metric test/loss=max or --metric test/loss=min"):
        choose_metric("test/loss", CONFIG)
    with pytest.raises(ConfigError, match="no monitored metric"):
        choose_metric(None, {"callbacks": {}})
