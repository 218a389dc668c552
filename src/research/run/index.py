"""Encode a BEIR corpus with a trained run's ColBERT and save a search index over it (the work of
`research-index`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research.config.instantiate import trusting
from research.config.saved_run import saved_run_config
from research.data.beir.sources import Folder
from research.retrieval.searchers import build_searcher
from research.run.build import build_task
from research.run.preflight import eval_checkpoint
from research.run.resume import check_fits, model_family
from research.tracking.checkpoints import read_checkpoint

# Documents encoded and added to the index at a time (~200 MB of fp32 tokens at 100 tokens of
# D=128 each).
ENCODE_BLOCK = 4096


def build_index(
    run_dir: str | Path,
    corpus: str | Path,
    out: str | Path,
    kind: str,
    params: dict[str, Any],
    ckpt: str = "best",
    batch_size: int = 64,
    trust_run_dir: bool = False,
) -> Any:
    """Encode the BEIR corpus with the run's network at checkpoint `ckpt`, index it, save it.
    Only declared components are built from the run's saved config unless `trust_run_dir`."""
    config = saved_run_config(Path(run_dir), trust=trust_run_dir, opt_in="trust_run_dir=True")
    with trusting(config, trust_run_dir):
        _, task = build_task(config)
    path = eval_checkpoint(Path(run_dir), ckpt)
    checkpoint = read_checkpoint(path)
    check_fits(path, checkpoint, task, model_family(config))
    task.load_state_dict(checkpoint["state_dict"])
    del checkpoint
    documents = Folder(Path(corpus)).corpus
    ids = list(documents)
    searcher = build_searcher(kind, **params)
    # Encoded and added a block at a time: the corpus's fp32 tokens are never held all at once
    # (a PLAID build keeps only compact codes and an fp16 file of them).
    for start in range(0, len(ids), ENCODE_BLOCK):
        block = ids[start : start + ENCODE_BLOCK]
        embeddings = task.net.encode(
            [documents[i] for i in block],
            is_query=False,
            batch_size=batch_size,
            show_progress_bar=True,
        )
        searcher.add(block, embeddings)
    searcher.save(Path(out))
    return searcher
