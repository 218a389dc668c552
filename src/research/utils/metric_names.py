"""What a metric's name says about it: which way it is better, and whether it is a share.

Torch- and pandas-free, so that composing a config (a checkpoint's mode) and building a report
read the same rules: `acc`, `ndcg`, `mfu`, rates `*_per_s` ... are better higher; `loss`, `ppl`,
`bpb` (bits per byte), ... lower. The names better higher, rates aside, name shares of something
(of the examples, of the ideal ranking's gain, of the peak FLOP/s), whose mean lies in [0, 1].
"""

from __future__ import annotations

import re

_SHARES = {"acc", "accuracy", "ndcg", "mrr", "recall", "f1", "precision", "map", "auc", "auroc"}
_SHARES |= {"mfu"}  # model FLOPs utilization
_LOWER = {"loss", "perplexity", "ppl", "bpb", "error", "err", "mse", "mae", "rmse", "wer", "cer"}
# What a task's best checkpoint follows when its declaration names nothing: every task logs it.
DEFAULT_MONITOR = "val/loss"


def _leaf_words(metric: str) -> tuple[str, set[str]]:
    """The metric's last path part and its words (`test/ndcg@10` -> ndcg@10, {ndcg, 10, ...})."""
    leaf = re.split(r"[/.]", metric)[-1].lower()
    words = {w for part in re.split(r"[^a-z0-9]+", leaf) for w in (part, part.rstrip("0123456789"))}
    return leaf, words


def direction_by_name(metric: str) -> str | None:
    """'max' or 'min' from the words of the metric's last path part (`test/ndcg@10` -> ndcg);
    None when the name does not say."""
    leaf, words = _leaf_words(metric)
    if words & _LOWER:
        return "min"
    return "max" if words & _SHARES or leaf.endswith("_per_s") else None


def named_as_share(metric: str) -> bool:
    """Whether the name says the metric is a share (accuracy, nDCG, recall, MFU, ...)."""
    _, words = _leaf_words(metric)
    return bool(words & _SHARES) and not words & _LOWER
