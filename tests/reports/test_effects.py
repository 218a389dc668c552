"""Main effects of a factorial ablation: each level averaged over the other axes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from research.reports import build_report, effects_markdown, summarize
from research.reports.effects import main_effects
from tests.reports.conftest import write_run

CELLS = {"sgd+norm": 0.90, "sgd+raw": 0.80, "momentum+norm": 0.96, "momentum+raw": 0.94}
AXES = {"optimizer": ["sgd", "momentum"], "normalize": ["norm", "raw"]}


def test_each_level_is_the_mean_of_its_variant_means():
    runs = pd.DataFrame(
        [
            {"variant": v, "seed": s, "status": "completed", "final.test/acc": m + 0.01 * s}
            for v, m in CELLS.items()
            for s in range(3)
        ]
        + [{"variant": "sgd+norm", "seed": 9, "status": "completed", "final.test/acc": 0.90 + 0.01}]
    )  # an extra seed in one cell must not outweigh the other cells
    effects = main_effects(summarize(runs, ["final.test/acc"]), "final.test/acc", AXES)
    got = {(r["axis"], r["level"]): (r["mean"], r["diff"]) for r in effects.to_dict("records")}

    assert got["optimizer", "sgd"][0] == pytest.approx((0.91 + 0.81) / 2)
    assert got["optimizer", "momentum"] == pytest.approx(
        ((0.97 + 0.95) / 2, (0.97 + 0.95) / 2 - (0.91 + 0.81) / 2)
    )
    assert got["normalize", "raw"][0] == pytest.approx((0.81 + 0.95) / 2)
    assert got["optimizer", "sgd"][1] == 0  # the first level is the reference


def test_a_level_difference_has_welchs_interval_with_n_beside_it():
    """With one cell per level, a main effect is a two-sample difference: Welch's interval."""
    values = {"sgd": [0.80, 0.83, 0.79], "momentum": [0.90, 0.95, 0.91, 0.97]}
    runs = pd.DataFrame(
        [
            {"variant": v, "seed": s, "status": "completed", "final.test/acc": x}
            for v, xs in values.items()
            for s, x in enumerate(xs)
        ]
    )
    table = summarize(runs, ["final.test/acc"])
    axes = {"optimizer": ["sgd", "momentum"]}
    effects = main_effects(table, "final.test/acc", axes).set_index("level")
    welch = stats.ttest_ind(values["momentum"], values["sgd"], equal_var=False)
    assert tuple(effects.loc["momentum", ["low", "high"]]) == pytest.approx(
        tuple(welch.confidence_interval(0.95))
    )
    assert effects.loc["sgd", ["low", "high"]].isna().all()  # the reference level
    low, high = effects.loc["momentum", ["low", "high"]]
    text = effects_markdown(table, ["final.test/acc"], axes)
    assert f"[+{low:.3f}, +{high:.3f}] | 4 | 1 |" in text  # n (runs) beside the interval


@pytest.mark.slow
def test_report_of_an_axes_ablation_has_the_main_effect_table(tmp_path: Path):
    for variant in CELLS:
        for seed in range(2):
            write_run(
                tmp_path / "runs" / f"{variant}_s{seed}",
                seed,
                [f"seed={seed}", f"variant={variant}"],
                variant=variant,
            )
    spec = {
        "axes": {"optimizer": {"sgd": [], "momentum": []}, "normalize": {"norm": [], "raw": []}},
        "baseline": "sgd+norm",
    }
    report = build_report(tmp_path / "runs", tmp_path / "out", ["test/acc"], ablation=spec)
    assert "## Main effects" in report.markdown
    assert (
        "| optimizer | momentum |" in report.markdown and "| normalize | raw |" in report.markdown
    )
    assert report.baseline == "sgd+norm"
