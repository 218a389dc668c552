"""Per-position next-token loss of a trained causal LM, and whether it uses its whole context.

The loss at position t (0-based) of a window is the cross-entropy of predicting token t + 1
from tokens 0..t: it has t + 1 tokens of context. Averaged over the evaluated windows it shows
how much of the context the model uses: the curve falls as long as more context helps, and is
flat from the point where more context stops helping. Every evaluation length reads the same
held-out tokens (research.data.language_model), so curves at different lengths compare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

CONFIDENCE = 0.95


class ContextUse(NamedTuple):
    """The criterion's numbers for one model at one length (losses in nats per token)."""

    third_quarter: float  # mean loss over positions [n/2, 3n/4)
    last_quarter: float  # mean loss over positions [3n/4, n)
    gain: float  # third_quarter - last_quarter: the mean per-window difference
    low: float  # its paired Student-t interval (NaN when there is none)
    high: float
    windows: int
    uses_whole_context: bool


def context_use(losses: Any, confidence: float = CONFIDENCE) -> ContextUse:
    """Whether a model uses its whole context of n tokens, from its per-window, per-position
    losses (windows x n).

    Criterion: the mean loss over the last quarter of positions (3n/4 to n tokens of context)
    is lower than over the third quarter (n/2 to 3n/4 tokens), by more than the windows'
    sampling error: the lower end of the 95% paired Student-t interval of the per-window
    difference (third-quarter mean minus last-quarter mean, one value per window) is above 0.
    So the loss still falls in the second half of the context: tokens more than n/2 back
    still help. A model that uses no more than n/2 tokens of context has equal losses in the
    two quarters, in expectation, since windows start at arbitrary offsets of the stream (no
    position in a window is easier by its content). Comparing the second quarter instead
    would be met by any model that uses more than n/4 tokens.

    Validity: Student's t interval over W windows covers at its nominal rate at every W >= 2
    when the per-window differences are normal, and near it for non-normal differences once W
    is in the hundreds (65,536 tokens give 512 windows at n = 128); it treats windows as
    independent, while neighbouring windows of one file are correlated, so with strongly
    correlated windows it is somewhat too narrow. Fewer than 2 windows, or no spread, give no
    interval and the criterion is not met.
    """
    from research.reports.stats import mean_interval

    values = np.asarray(losses, dtype=float)
    if values.ndim != 2 or values.shape[1] < 4:
        raise ValueError(
            f"losses must be windows x positions with >= 4 positions, got {values.shape}"
        )
    n = values.shape[1]
    third = values[:, n // 2 : n - n // 4].mean(axis=1)
    last = values[:, n - n // 4 :].mean(axis=1)
    gain = mean_interval(third - last, confidence, scale=np.abs(values).max())
    return ContextUse(
        float(third.mean()),
        float(last.mean()),
        gain.mean,
        gain.low,
        gain.high,
        gain.n,
        bool(gain.low > 0),  # NaN (no interval) compares False
    )


def window_losses(net: Any, windows: Any, batch_size: int) -> Any:
    """Next-token cross-entropy at every position of every window (windows x n, float64):
    `windows` yields windows of n + 1 token ids; inputs are the first n, targets the last n,
    as the causal LM task computes its loss."""
    import torch
    from torch.nn import functional

    net.eval()
    rows = []
    with torch.inference_mode():
        for start in range(0, len(windows), batch_size):
            ids = torch.stack(
                [windows[i] for i in range(start, min(start + batch_size, len(windows)))]
            )
            logits = net(ids[:, :-1]).float()
            loss = functional.cross_entropy(
                logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="none"
            )
            rows.append(loss.view(ids.shape[0], -1).double())
    return torch.cat(rows)


def run_position_losses(
    run_dir: Path, checkpoint: Path, overrides: list[str], lengths: list[int]
) -> dict[int, Any]:
    """Per-window, per-position test losses of a training run's checkpoint at each length, the
    network and data rebuilt from the run's saved config with `overrides` applied (as
    `research-eval` does); evaluation batches hold as many tokens as the task's own do."""
    from research.config.saved_run import saved_run_config
    from research.run.build import build_task
    from research.tasks.causal_lm import load_net_weights

    config = saved_run_config(run_dir, overrides)
    datamodule, task = build_task(config)
    load_net_weights(task.net, checkpoint)
    datamodule.setup("test")
    data = datamodule.config
    found = {}
    for length in lengths:
        if length not in data.lengths:
            raise ValueError(f"length {length} is not evaluated by {run_dir}: {data.lengths}")
        windows = datamodule.splits["test"][data.lengths.index(length)]
        batch = max(1, data.batch_size * data.context // length)
        found[length] = window_losses(task.net, windows, batch)
    return found


def summary(losses: dict[int, Any]) -> dict[str, Any]:
    """What a curve's json holds per length: the mean loss at each position (over windows), the
    number of windows and the criterion's numbers."""
    return {
        str(length): {
            "curve": [round(float(v), 6) for v in values.mean(0)],
            **context_use(values)._asdict(),
        }
        for length, values in losses.items()
    }


def write_curves(curves: dict[str, Any], title: str, folder: Path, name: str) -> None:
    """`name`.json (the summary of every length) and `name`.png (one line per length)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(curves, indent=1) + "\n")
    lines = {f"{n} tokens": entry["curve"] for n, entry in curves.items()}
    plot_panels({title: lines}, folder / f"{name}.png")


def plot_panels(panels: dict[str, dict[str, list[float]]], path: Path) -> None:
    """One panel per title, one line per label: loss against tokens of context (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(
        1, len(panels), figsize=(4.5 * len(panels), 4), sharey=True, squeeze=False
    )
    for axis, (title, lines) in zip(axes[0], panels.items(), strict=True):
        for label, curve in lines.items():
            axis.plot(np.arange(1, len(curve) + 1), curve, linewidth=0.8, label=label)
        axis.set(xscale="log", xlabel="tokens of context (position + 1)", title=title)
        axis.legend(fontsize=7)
    axes[0][0].set(ylabel="mean next-token loss (nats)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
