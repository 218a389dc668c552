"""The two baselines of the colbert_stdlib study, on the same test split the ColBERT runs search.

    python experiments/colbert_stdlib/baselines.py [--data-dir data] [--max-length 128] \
        [--partition 1]

BM25 (bm25s, Lucene defaults) and zero-shot dense MiniLM: all-MiniLM-L6-v2 as its
sentence-transformers config uses it (mean pooling over real tokens, then L2 normalisation),
cosine similarity, exact search. Documents are cut at the same length as the ColBERT runs, so
the comparison is at equal input. Prints a markdown table and writes it beside this file as
baselines[_partition<N>][_val].json, each method with its per-query scores (`per_query`:
{metric: {query id: score}}), so a trained run can be compared with it query by query.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from research.data.codesearch import StdlibCodeSearchDataModule
from research.retrieval.bm25 import bm25_rank
from research.retrieval.metrics import DEFAULT_METRICS as METRICS
from research.retrieval.metrics import mean_score, per_query
from research.utils.backbones import default_backbone


def mean_pooled(
    model: Any, tokenizer: Any, texts: list[str], max_length: int, batch_size: int = 64
) -> torch.Tensor:
    """Unit-norm sentence embeddings, one row per text, in input order."""
    rows = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(
                texts[start : start + batch_size],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            rows.append(torch.nn.functional.normalize(pooled, dim=-1))
    return torch.cat(rows)


def minilm() -> tuple[Any, Any]:
    """The packaged all-MiniLM-L6-v2's tokenizer and encoder (eval mode), read offline."""
    from transformers import AutoModel, AutoTokenizer

    name = default_backbone()
    return AutoTokenizer.from_pretrained(name), AutoModel.from_pretrained(name).eval()


def dense_rank(
    corpus: dict[str, str], queries: dict[str, str], k: int, query_length: int, doc_length: int
) -> dict[str, list[tuple[str, float]]]:
    tokenizer, model = minilm()
    doc_ids, query_ids = list(corpus), list(queries)
    documents = mean_pooled(model, tokenizer, [corpus[d] for d in doc_ids], doc_length)
    queries_ = mean_pooled(model, tokenizer, [queries[q] for q in query_ids], query_length)
    scores = queries_ @ documents.T
    top = scores.topk(min(k, len(doc_ids)), dim=1)
    return {
        query: [(doc_ids[i], float(s)) for i, s in zip(idx, val, strict=True)]
        for query, idx, val in zip(query_ids, top.indices.tolist(), top.values, strict=True)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--query-length", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128, help="document tokens")
    parser.add_argument("--split", default="test", choices=["val", "test"])
    parser.add_argument(
        "--partition", type=int, default=0, help="the module partition (data.partition)"
    )
    args = parser.parse_args()
    data = StdlibCodeSearchDataModule(data_dir=args.data_dir, partition=args.partition)
    data.setup()
    split = data.retrieval_split(args.split)
    print(f"{args.split}: {len(split.queries)} queries, {len(split.corpus)} documents")
    rankers = {
        "BM25 (bm25s)": lambda: bm25_rank(split.corpus, split.queries, 100),
        "MiniLM mean-pooled, zero-shot": lambda: dense_rank(
            split.corpus, split.queries, 100, args.query_length, args.max_length
        ),
    }
    results = {}
    print("| method | " + " | ".join(METRICS) + " | time (s) |")
    print("|---|" + "---|" * (len(METRICS) + 1))
    for name, rank in rankers.items():
        start = time.perf_counter()
        run = {q: dict(hits) for q, hits in rank().items()}
        seconds = time.perf_counter() - start
        scores = per_query(run, split.qrels, METRICS)
        means = {metric: mean_score(scores[metric]) for metric in METRICS}
        results[name] = {**means, "seconds": seconds, "per_query": scores}
        cells = " | ".join(f"{results[name][m]:.4f}" for m in METRICS)
        print(f"| {name} | {cells} | {seconds:.1f} |")
    # One file per (partition, split): a val run must not replace the test figures.
    suffix = f"_partition{args.partition}" if args.partition else ""
    suffix += f"_{args.split}" if args.split != "test" else ""
    out = Path(__file__).with_name(f"baselines{suffix}.json")
    sizes = {"queries": len(split.queries), "documents": len(split.corpus)}
    out.write_text(
        json.dumps({"split": args.split, "args": vars(args), **sizes, **results}, indent=2)
    )


if __name__ == "__main__":
    main()
