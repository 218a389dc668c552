"""Plots a reviewer accepts: seeds over mean and CI (no bars from 0), short labels, distinct
colours past 10 variants, legends outside the data, n per epoch where runs differ in length."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.patches import Rectangle

from research.reports import plot_curves, plot_points, summarize
from research.reports.plots import short_labels


def _runs(n_variants: int, seeds: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        {
            "variant": f"v{i:02d}",
            "seed": s,
            "status": "completed",
            "final.test/acc": 0.97 + rng.uniform(0, 0.02),
        }
        for i in range(n_variants)
        for s in range(seeds)
    ]
    return pd.DataFrame(rows)


def _histories(n_variants: int, epochs: dict[int, int] | None = None) -> pd.DataFrame:
    rows = []
    for i in range(n_variants):
        for seed, length in (epochs or {0: 3, 1: 3}).items():
            rows += [
                {
                    "run_dir": f"r{i}-{seed}",
                    "variant": f"v{i:02d}",
                    "seed": seed,
                    "epoch": e,
                    "val/acc": 0.5 + 0.1 * e + 0.01 * i,
                }
                for e in range(length)
            ]
    return pd.DataFrame(rows)


def test_points_show_every_seed_over_the_mean_and_ci_not_bars_from_zero():
    runs = _runs(4)
    fig = plot_points(runs, summarize(runs, ["final.test/acc"]), "final.test/acc")
    (ax,) = fig.axes
    assert not [p for p in ax.patches if isinstance(p, Rectangle)]  # no bars
    dots = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    assert dots == len(runs)
    low, high = ax.get_ylim()
    assert 0.9 < low < runs["final.test/acc"].min() and high < 1.01


def test_labels_drop_shared_overrides_and_long_floats():
    labels = short_labels(
        ["debug=limit,optimizer.lr=0.00012345678901234567", "debug=limit,optimizer.lr=0.1"]
    )
    assert list(labels.values()) == ["optimizer.lr=0.000123", "optimizer.lr=0.1"]
    assert short_labels(["momentum+raw"]) == {"momentum+raw": "momentum+raw"}


def test_colours_stay_distinct_past_ten_and_twenty_variants():
    for n in (12, 25):
        (ax,) = plot_curves(_histories(n), "val/acc").axes
        colours = {tuple(np.round(line.get_color(), 4)) for line in ax.get_lines()}
        assert len(colours) == n


def test_legend_is_outside_the_data():
    fig = plot_curves(_histories(12), "val/acc")
    FigureCanvasAgg(fig).draw()
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1


def test_curve_bands_stay_inside_the_runs_values():
    rows = [
        {"run_dir": f"r{s}", "variant": "a", "seed": s, "epoch": e, "train/loss": loss}
        for s, losses in enumerate([[0.5, 0.01], [0.6, 0.02], [0.4, 0.3]])
        for e, loss in enumerate(losses)
    ]
    (ax,) = plot_curves(pd.DataFrame(rows), "train/loss").axes
    (band,) = [c for c in ax.collections if not isinstance(c, PathCollection)]
    ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    assert ys.min() == pytest.approx(0.01) and ys.max() == pytest.approx(0.6)  # mean-std < 0


def test_curves_say_n_per_epoch_when_runs_differ_in_length():
    uneven = plot_curves(_histories(1, {0: 4, 1: 2}), "val/acc")
    texts = [t.get_text() for t in uneven.axes[0].texts]
    assert texts == ["n=2", "n=1"]
    assert not plot_curves(_histories(1), "val/acc").axes[0].texts
