"""Teacher scores for `loss=distillation` on the stdlib code-search task: a free teacher.

    python experiments/colbert_stdlib/teacher.py --out data/teachers/minilm_p0.jsonl \
        [--partition 0] [--negatives 3] [--scale 20]

For every training query of the partition: its positive and its `negatives` BM25 hard
negatives (the same mining as contrastive training), scored by the zero-shot dense MiniLM
(cosine of mean-pooled embeddings, as `baselines.py`) times `scale`. The distillation loss
applies one temperature to teacher and student alike, so the teacher's cosines are turned into
logits here: 20 is the scale sentence-transformers' MultipleNegativesRankingLoss trains
all-MiniLM-L6-v2's family with (temperature 0.05). Writes the `data.distillation_file` format:
JSON lines {"query_id", "document_ids", "scores"}, positive first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from baselines import mean_pooled, minilm  # noqa: E402

from research.data.beir.sampling import judged  # noqa: E402
from research.data.beir.sources import RetrievalSplit  # noqa: E402
from research.data.codesearch import StdlibCodeSearchDataModule  # noqa: E402
from research.data.negatives import mine_bm25_negatives  # noqa: E402


def teacher_rows(
    train: RetrievalSplit, negatives: int, scale: float, query_length: int, doc_length: int
) -> list[dict]:
    """One row per (query, positive) of `train`, over its own judged documents."""
    corpus = judged(train)
    positives = {q: sorted(d for d, s in docs.items() if s > 0) for q, docs in train.qrels.items()}
    mined = mine_bm25_negatives(corpus, train.queries, positives, negatives)
    tokenizer, model = minilm()
    doc_ids = sorted(corpus)
    row_of = {doc: i for i, doc in enumerate(doc_ids)}
    documents = mean_pooled(model, tokenizer, [corpus[d] for d in doc_ids], doc_length)
    query_ids = sorted(mined)
    queries = mean_pooled(model, tokenizer, [train.queries[q] for q in query_ids], query_length)
    rows = []
    for query, embedding in zip(query_ids, queries, strict=True):
        for positive in positives[query]:
            listed = [positive, *mined[query]]
            scores = (documents[[row_of[d] for d in listed]] @ embedding * scale).tolist()
            rows.append({"query_id": query, "document_ids": listed, "scores": scores})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON lines file to write")
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--negatives", type=int, default=3)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--query-length", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128, help="document tokens")
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists():
        sys.exit(f"error: {out} exists; give another --out or remove it")
    data = StdlibCodeSearchDataModule(data_dir=args.data_dir, partition=args.partition)
    data.prepare_data()
    with torch.inference_mode():
        rows = teacher_rows(
            data.source.split("train"),
            args.negatives,
            args.scale,
            args.query_length,
            args.max_length,
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    agree = sum(max(r["scores"]) == r["scores"][0] for r in rows) / len(rows)
    print(f"{out}: {len(rows)} queries; the teacher ranks the positive first for {agree:.1%}")


if __name__ == "__main__":
    main()
