"""The report's "Seeds until decided" section, from the decisions.json research-ablate wrote."""

from __future__ import annotations

from pathlib import Path

from research.ablation.decide import Rule, Verdict, write_decisions
from research.reports.decisions import decisions_markdown


def test_the_section_shows_each_decision_its_seeds_and_interval(tmp_path: Path):
    rule = Rule("final.test/acc", "max", 0.05, 3, 0.01, 10)
    verdicts = [
        Verdict("momentum", "better", "the interval excludes 0", [0, 1, 2, 3], 0.2, 0.1, 0.3, True),
        Verdict(
            "nesterov",
            "equivalent",
            "the interval lies within ±0.01",
            [0, 1, 2],
            0.001,
            -0.004,
            0.006,
            True,
        ),
        Verdict(
            "raw",
            "undecided",
            "the interval holds 0; seed budget of 10 reached",
            list(range(10)),
            0.01,
            -0.02,
            0.04,
            True,
        ),
        Verdict("late", "undecided", "the interval holds 0", [0, 1], 0.03, None, None, False),
    ]
    write_decisions(tmp_path, "tiny", "sgd", rule, 2, verdicts)
    text = decisions_markdown(tmp_path)
    assert "## Seeds until decided (`final.test/acc`, higher is better, against `sgd`)" in text
    assert "| momentum | **better** | 0–3 (4) | +0.2000 [+0.1000, +0.3000] |" in text
    assert "| nesterov | equivalent | 0–2 (3) | +0.0010 [−0.0040, +0.0060] |" in text
    assert "| raw | undecided | 0–9 (10) |" in text and "seed budget of 10 reached" in text
    assert "| late | undecided (not finished: re-run the command to go on) | 0,1 (2) | " in text
    assert "+0.0300 [−∞, +∞]" in text
    assert "level 0.0167 = α/k" in text and "equivalent: it lies within ±0.01" in text
    assert "assumes the seed-to-seed noise of the difference is normal" in text


def test_no_decisions_no_section(tmp_path: Path):
    assert decisions_markdown(tmp_path) == ""
    (tmp_path / "decisions.json").write_text("{not json")
    assert decisions_markdown(tmp_path) == ""
