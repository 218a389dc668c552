"""Per-position next-token loss of a trained causal LM, and whether it uses its whole context.

The loss at position t (0-based) of a window is the cross-entropy of predicting token t + 1
from tokens 0..t: it has t + 1 tokens of context. Averaged over the evaluated windows it shows
how much of the context the model uses: the curve falls as long as more context helps, and is
flat from the point where more context stops helping. Every evaluation length reads the same
held-out tokens (research.data.language_model), so curves at different lengths compare.
The curve's positions hold different tokens, though, and which tokens sit where varies far more
from window to window than the context's effect does; so whether the model uses the far part
of its context is decided on the same targets read twice, with and without that part
(`context_use`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

CONFIDENCE = 0.95


class ContextUse(NamedTuple):
    """The criterion's numbers for one model at one length n (losses in nats per token), all
    over the targets of the last quarter of positions [3n/4, n)."""

    loss_full: float  # their mean loss with the whole window as context (3n/4 + 1..n tokens)
    loss_truncated: float  # with the window from position n/2 on (n/4 + 1..n/2 tokens)
    gain: float  # loss_truncated - loss_full: the mean of the per-window differences
    low: float  # its Student-t interval over windows (NaN when there is none)
    high: float
    windows: int
    uses_whole_context: bool


def context_use(full: Any, truncated: Any, confidence: float = CONFIDENCE) -> ContextUse:
    """Whether a model trained at context n uses the far half of its context, from its losses
    on the same test windows of n + 1 tokens read twice: `full` (windows x n) fed each whole
    window, `truncated` (windows x (n - n // 2)) fed each window from position n // 2 on
    (tokens n/2..n, see `truncated_losses`), so that truncated column j predicts the token that
    full column n // 2 + j predicts.

    Criterion: over the targets of the last quarter of positions, [3n/4, n), the loss with the
    whole window is lower than with the truncated one by more than the windows' sampling error:
    the lower end of the 95% Student-t interval of the per-window gain (mean over those targets
    of truncated loss minus full loss, one value per window) is above 0. The two reads predict
    the very same tokens and differ only in the context they see, so the tokens' own difficulty
    cancels within each window and the interval measures the effect of the context alone (a
    comparison of different positions' losses mixes in which tokens sit there, which swamps it).

    What it means: the target at position t has t + 1 tokens of context in the whole window and
    t + 1 - n/2 in the truncated one, n/4 + 1 for the quarter's first target up to n/2 for the
    last. Met: the tokens dropped (those more than t + 1 - n/2 back; more than n/4 + 1 back
    for the quarter's first target, more than n/2 for its last) measurably lower the loss, so
    the model's predictions reach beyond the nearest n/4 + 1 to n/2 tokens. A model that looks
    at most n/4 + 1 tokens back has a gain of exactly 0 (it sees the same tokens in both reads);
    one that reaches between n/4 + 1 and n/2 tokens back can meet it through the quarter's first
    targets, so it shows use of far context, not of every one of the n tokens. With
    absolute positions the truncated read also moves the targets to earlier positions; with
    RoPE (relative) only the context changes.

    Validity: Student's t interval over W windows covers at its nominal rate at every W >= 2
    when the per-window gains are normal, and near it for non-normal gains once W is in the
    hundreds (65,536 test tokens give 512 windows at n = 128). It treats windows as independent
    draws; the windows are consecutive stretches of one test stream, so neighbouring windows of
    one source file are correlated (the same names and idioms make the far context useful in
    both) and with strong correlation the interval is too narrow. Fewer than 2 windows, or no
    spread in the gains (a model whose two reads agree exactly), give no interval and the
    criterion is not met.
    """
    from research.reports.stats import mean_interval

    full = np.asarray(full, dtype=float)
    truncated = np.asarray(truncated, dtype=float)
    if full.ndim != 2 or full.shape[1] < 4:
        raise ValueError(
            f"full losses must be windows x n positions with n >= 4, got shape {full.shape}"
        )
    windows, n = full.shape
    if truncated.shape != (windows, n - n // 2):
        raise ValueError(
            f"truncated losses must be windows x (n - n // 2) = ({windows}, {n - n // 2}) for "
            f"full losses of shape {full.shape} (each window read from position n // 2 on), "
            f"got shape {truncated.shape}"
        )
    quarter = n - n // 4  # the last quarter of positions, [3n/4, n)
    with_all = full[:, quarter:].mean(axis=1)
    without_far = truncated[:, quarter - n // 2 :].mean(axis=1)
    scale = max(np.abs(full).max(), np.abs(truncated).max()) if windows else None
    gain = mean_interval(without_far - with_all, confidence, scale=scale)
    return ContextUse(
        float(with_all.mean()) if windows else float("nan"),
        float(without_far.mean()) if windows else float("nan"),
        gain.mean,
        gain.low,
        gain.high,
        gain.n,
        bool(gain.low > 0),  # NaN (no interval) compares False
    )


def window_losses(net: Any, windows: Any, batch_size: int, start: int = 0) -> Any:
    """Next-token cross-entropy at every position of every window (windows x n, float64):
    `windows` yields windows of n + 1 token ids; inputs are the first n, targets the last n,
    as the causal LM task computes its loss. With `start`, each window is read from token
    `start` on (windows x (n - start)): the same targets from `start` + 1 on, with `start`
    fewer tokens of context each."""
    import torch
    from torch.nn import functional

    net.eval()
    rows = []
    with torch.inference_mode():
        for first in range(0, len(windows), batch_size):
            ids = torch.stack(
                [windows[i][start:] for i in range(first, min(first + batch_size, len(windows)))]
            )
            logits = net(ids[:, :-1]).float()
            loss = functional.cross_entropy(
                logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="none"
            )
            rows.append(loss.view(ids.shape[0], -1).double())
    return torch.cat(rows)


def truncated_losses(net: Any, windows: Any, batch_size: int) -> Any:
    """`window_losses` with every window of n + 1 tokens read from position n // 2 on (windows
    x (n - n // 2)): the second argument of `context_use`."""
    n = len(windows[0]) - 1
    return window_losses(net, windows, batch_size, start=n // 2)


def load_checkpoint(run_dir: Path, checkpoint: Path, overrides: list[str]) -> tuple[Any, Any]:
    """The datamodule (its val and test windows built) and the network of a training run's
    checkpoint, rebuilt from the run's saved config with `overrides` applied (as `research-eval`
    does): loaded once, read by `split_losses` for as many splits and lengths as needed."""
    from research.config.saved_run import saved_run_config
    from research.run.build import build_task
    from research.tasks.causal_lm import load_net_weights

    datamodule, task = build_task(saved_run_config(run_dir, overrides))
    load_net_weights(task.net, checkpoint)
    datamodule.setup("test")  # builds the val and test windows
    return datamodule, task.net


def split_losses(
    datamodule: Any,
    net: Any,
    lengths: list[int],
    truncate: tuple[int, ...] = (),
    split: str = "test",
) -> tuple[dict[int, Any], dict[int, Any]]:
    """Per-window, per-position losses of `net` on `split` at each length, and at the lengths
    in `truncate` also its `truncated_losses` (for `context_use`); every window of the split the
    datamodule holds at a length is read (data.eval_tokens sets how many), in evaluation batches
    of as many tokens as the task's own."""
    data = datamodule.config
    found, truncated = {}, {}
    for length in lengths:
        if length not in data.lengths:
            raise ValueError(f"length {length} is not evaluated by this run: {data.lengths}")
        windows = datamodule.splits[split][data.lengths.index(length)]
        batch = max(1, data.batch_size * data.context // length)
        found[length] = window_losses(net, windows, batch)
        if length in truncate:
            truncated[length] = truncated_losses(net, windows, batch)
    return found, truncated


def format_gain(found: dict[str, Any]) -> str:
    """A `ContextUse`'s gain with its interval, as the study's tables print it."""
    return f"{found['gain']:.4f} [{found['low']:.4f}, {found['high']:.4f}]"


def context_cells(found: dict[str, Any]) -> str:
    """The criterion at L of one run as four table cells: gain [interval] and verdict on the
    validation windows (`found["val"]`), then on the test windows (`found` itself)."""
    return " | ".join(
        f"{format_gain(v)} | {'yes' if v['uses_whole_context'] else 'no'}"
        for v in (found["val"], found)
    )


def summary(losses: dict[int, Any], truncated: dict[int, Any] | None = None) -> dict[str, Any]:
    """What a curve's json holds per length: the mean loss at each position (over windows) and
    the number of windows; at the lengths `truncated` has, also the criterion's numbers."""
    truncated = truncated or {}
    return {
        str(length): {
            "curve": [round(float(v), 6) for v in values.mean(0)],
            "windows": len(values),
            **(context_use(values, truncated[length])._asdict() if length in truncated else {}),
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
