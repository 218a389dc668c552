"""ColBERT search at corpus scale: exact search against the hardware limit, and the compressed
PLAID-class index against exact search.

Corpus: real stdlib functions (as stdlib_codesearch builds them) encoded by MiniLM-ColBERT
(packaged MiniLM, offline; the projection is untrained, so the token geometry is MiniLM's), then
synthetic documents up to the size asked: each draws 16-64 tokens from the tokens of three random
real documents, moved by Gaussian noise (0.03 per dimension, cosine ~0.9 to the original) and
re-normalised, so the corpus keeps the clustered shape of real embeddings. Queries: the
docstring summaries of real functions, encoded as queries (32 tokens).

Printed per corpus size:
- exact search, one query at a time, against a plain matmul of the same FLOPs (the query's
  [32, D] tokens times all [n_tokens, D] document tokens): interleaved A B A B over `--pairs`
  queries, median ratio with min-max. Target: <= 3x.
- exact and PLAID query latency p50/p95 (one query per call), PLAID build time, bytes per token
  held in memory against fp32 (4 x D) plus the fp16 tokens kept on disk for its exact re-rank,
  and PLAID's recall@10 against exact search, for every combination of the search parameters
  given (one index per nbits; defaults: PlaidConfig's, "auto" for centroids, candidates and
  rerank, each row naming the sizes auto resolved to).

    python benchmarks/colbert_index.py [--sizes 10000 100000] [--nbits 2 4] [--centroids auto]
        [--probes 8 16] [--candidates auto 512 1024] [--rerank 0 64 auto]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from torch import Tensor
from torch.nn import functional as F

from research.data.codesearch import stdlib_functions
from research.models.colbert import ColBERT
from research.retrieval.configs import AUTO, PlaidConfig
from research.retrieval.exact import ExactSearcher
from research.retrieval.plaid import PlaidIndex

K = 10


def real_embeddings(n: int, queries: int) -> tuple[list[Tensor], list[Tensor]]:
    """`n` stdlib function sources encoded as documents, and `queries` of their summaries."""
    functions = stdlib_functions()
    step = max(1, len(functions) // n)
    chosen = functions[::step][:n]
    torch.manual_seed(0)  # the untrained projection and marker embeddings: the same corpus
    model = ColBERT(max_length_document=128)
    documents = model.encode([f.document for f in chosen], is_query=False, batch_size=32)
    asked = [f.query for f in chosen[:: max(1, len(chosen) // queries)][:queries]]
    return documents, model.encode(asked, is_query=True)


def synthetic(real: list[Tensor], n: int, generator: torch.Generator) -> list[Tensor]:
    """`n` documents of 16-64 tokens drawn from three real documents each, plus noise."""
    documents = []
    for _ in range(n):
        pool = torch.cat([real[i] for i in torch.randint(len(real), (3,), generator=generator)])
        length = int(torch.randint(16, 65, (), generator=generator))
        picked = pool[torch.randint(len(pool), (length,), generator=generator)]
        noise = 0.03 * torch.randn(picked.shape, generator=generator)
        documents.append(F.normalize(picked + noise, dim=-1))
    return documents


def percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered) * 1000:.0f} / {p95 * 1000:.0f} ms"


def timed(run, *args) -> tuple[float, object]:
    start = time.perf_counter()
    result = run(*args)
    return time.perf_counter() - start, result


def against_matmul(exact: ExactSearcher, queries: list[Tensor], pairs: int) -> str:
    """Exact one-query search vs the plain matmul of its FLOPs, A B A B, median ratio."""
    tokens = exact._tokens
    ratios = []
    for query in (queries * pairs)[:pairs]:
        search_s, _ = timed(exact.search, [query], K)
        matmul_s, _ = timed(torch.matmul, query, tokens.T)
        ratios.append(search_s / matmul_s)
    return f"{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})"


def recall(found: list[list[tuple[str, float]]], exact: list[list[tuple[str, float]]]) -> float:
    hits = sum(
        len({d for d, _ in a} & {d for d, _ in e}) for a, e in zip(found, exact, strict=True)
    )
    return hits / sum(len(e) for e in exact)


def auto_or_int(text: str) -> int | str:
    """A PLAID size argument: "auto" or an integer."""
    return text if text == AUTO else int(text)


def shown(asked: int | str, used: int | None) -> str:
    """A size as the row names it: the integer used, marked when "auto" chose it."""
    return f"{used} (auto)" if asked == AUTO else str(used)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--real-documents", type=int, default=400)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--nbits", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--centroids", type=auto_or_int, default=PlaidConfig.centroids)
    parser.add_argument("--probes", type=int, nargs="+", default=[PlaidConfig.probes])
    sized = {"type": auto_or_int, "nargs": "+"}
    parser.add_argument("--candidates", **sized, default=[PlaidConfig.candidates])
    parser.add_argument("--rerank", **sized, default=[PlaidConfig.rerank])
    args = parser.parse_args()

    start = time.perf_counter()
    real, queries = real_embeddings(args.real_documents, args.queries)
    print(
        f"encoded {len(real)} real documents and {len(queries)} queries in "
        f"{time.perf_counter() - start:.0f} s; torch threads {torch.get_num_threads()}"
    )
    generator = torch.Generator().manual_seed(0)
    documents = list(real)
    rows = []
    for size in sorted(args.sizes):
        documents += synthetic(real, size - len(documents), generator)
        ids = [f"d{i}" for i in range(size)]
        exact = ExactSearcher()
        exact.add(ids, documents)
        n_tokens = exact.num_tokens
        print(f"\n{size} documents, {n_tokens} tokens, D={real[0].shape[1]}", flush=True)
        ratio = against_matmul(exact, queries, args.pairs)
        print(f"exact / matmul: {ratio}", flush=True)
        exact_runs = [timed(exact.search, [q], K) for q in queries]
        truth = [result[0] for _, result in exact_runs]
        fp32 = 4 * real[0].shape[1]
        rows.append(
            (
                size,
                "exact",
                "-",
                f"{fp32} (1x)",
                percentiles([s for s, _ in exact_runs]),
                "1.00",
                ratio,
            )
        )
        print(rows[-1], flush=True)
        for nbits in args.nbits:
            # Keep the fp16 re-rank tokens unless every setting asked re-ranks nothing.
            keep = AUTO if any(rerank != 0 for rerank in args.rerank) else 0
            index = PlaidIndex(centroids=args.centroids, nbits=nbits, rerank=keep)
            build_s, _ = timed(index.add, ids, documents)
            stored = index.bytes_per_token
            for probes, candidates, rerank in itertools.product(
                args.probes, args.candidates, args.rerank
            ):
                index.config.probes, index.config.candidates = probes, candidates
                index.config.rerank = rerank
                runs = [timed(index.search, [q], K) for q in queries]
                used = index.resolved
                on_disk = f" + {index.rerank_bytes_per_token} fp16" if used["rerank"] else ""
                rows.append(
                    (
                        size,
                        f"plaid nbits={nbits} centroids={shown(args.centroids, used['centroids'])}"
                        f" probes={probes} candidates={shown(candidates, used['candidates'])} "
                        f"rerank={shown(rerank, used['rerank'])}",
                        f"{build_s:.0f} s",
                        f"{stored}{on_disk} ({fp32 / stored:.1f}x smaller in memory)",
                        percentiles([s for s, _ in runs]),
                        f"{recall([r[0] for _, r in runs], truth):.3f}",
                        "-",
                    )
                )
                print(rows[-1], flush=True)
            del index
        del exact
    print(f"\nPLAID: {len(queries)} queries, one per call\n")
    print(
        "| documents | index | build | bytes/token | latency p50 / p95 | recall@10 vs exact "
        "| exact / matmul |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


if __name__ == "__main__":
    main()
