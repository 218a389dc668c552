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
- exact and PLAID query latency p50/p95 (one query per call), PLAID build time and the build's
  peak RSS, bytes per token held in memory against fp32 (4 x D) plus the fp16 tokens kept on
  disk for its exact re-rank, and PLAID's recall@10 against exact search, for every combination
  of the search parameters given (one index per nbits; defaults: PlaidConfig's, "auto" for
  centroids, candidates and rerank, each row naming the sizes auto resolved to).

Each PLAID index is built in a process of its own, fed the corpus BLOCK documents at a time
(the corpus is generated block by block there too) and saved; this process then loads it for
the searches. So the build's peak RSS (the child's VmHWM, printed beside the child's RSS
after its imports) is the index's own, apart from exact search's corpus held here.
`--build-only` builds and saves only (no exact search, no queries) and prints, per size, build
time and peak RSS, then a least-squares line of each against the number of documents over the
sizes measured, evaluated at `--project` documents.

    python benchmarks/colbert_index.py [--sizes 10000 100000] [--nbits 2 4] [--centroids auto]
        [--probes 8 16] [--candidates auto 512 1024] [--rerank 0 64 auto]
    python benchmarks/colbert_index.py --build-only --sizes 100000 300000 [--project 1000000]
        [--out FOLDER]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor
from torch.nn import functional as F

from research.retrieval.configs import AUTO, PlaidConfig
from research.retrieval.exact import ExactSearcher
from research.retrieval.plaid import PlaidIndex

K = 10
# Documents generated and added to the index at a time.
BLOCK = 10_000
GB = 1e9


def real_embeddings(n: int, queries: int) -> tuple[list[Tensor], list[Tensor]]:
    """`n` stdlib function sources encoded as documents, and `queries` of their summaries."""
    # Imported here: the build's own process (spawned) needs neither, nor their memory.
    from research.data.codesearch import stdlib_functions
    from research.models.colbert import ColBERT

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


def corpus_blocks(real: list[Tensor], size: int) -> Iterator[tuple[list[str], list[Tensor]]]:
    """The corpus of `size` documents, BLOCK at a time: the real ones, then synthetic ones from
    one seeded generator, so every process and every size draws the same documents."""
    generator = torch.Generator().manual_seed(0)
    for start in range(0, size, BLOCK):
        stop = min(start + BLOCK, size)
        documents = real[start:stop]
        documents += synthetic(real, stop - start - len(documents), generator)
        yield [f"d{i}" for i in range(start, stop)], documents


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes: Linux's VmHWM. Not ru_maxrss,
    which Linux carries over from the parent at fork and keeps across exec, so a child started
    by a large parent would report the parent's size."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024


def build_index(real_file: Path, size: int, params: dict, folder: Path) -> dict:
    """Run in a process of its own: build the PLAID index of the `size`-document corpus from
    blocks and save it to `folder`; its timings and this process's RSS."""
    import faiss  # noqa: F401 - loaded before the floor is read, as the build needs it

    saved = load_file(real_file)
    real = list(saved["tokens"].split(saved["lengths"].tolist()))
    floor = peak_rss()
    index, add_s, generate_start = PlaidIndex(**params), 0.0, time.perf_counter()
    for ids, documents in corpus_blocks(real, size):
        seconds, _ = timed(index.add, ids, documents)
        add_s += seconds
    generate_s = time.perf_counter() - generate_start - add_s
    build_s, _ = timed(index.build)
    save_s, _ = timed(index.save, folder)
    return {
        "tokens": index.num_tokens,
        "resolved": index.resolved,
        "add_s": add_s,
        "build_s": build_s,
        "generate_s": generate_s,
        "save_s": save_s,
        "floor": floor,
        "peak": peak_rss(),
        "on_disk": sum(file.stat().st_size for file in folder.iterdir()),
    }


def build_apart(real_file: Path, size: int, params: dict, folder: Path) -> dict:
    """`build_index` in a fresh spawned process, so its peak RSS is the build's alone."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(build_index, real_file, size, params, folder).result()


def described(size: int, built: dict) -> str:
    return (
        f"{size} documents, {built['tokens']} tokens, {built['resolved']}: "
        f"add {built['add_s']:.0f} s + build {built['build_s']:.0f} s "
        f"(= {built['add_s'] + built['build_s']:.0f} s), save {built['save_s']:.0f} s; "
        f"peak RSS {built['peak'] / GB:.2f} GB (process after imports and the real documents: "
        f"{built['floor'] / GB:.2f} GB); saved {built['on_disk'] / GB:.2f} GB; "
        f"corpus generation {built['generate_s']:.0f} s (not counted)"
    )


def projected(sizes: list[int], values: list[float], at: int) -> float:
    """The least-squares line of `values` against `sizes`, evaluated at `at`."""
    mean_size, mean_value = statistics.fmean(sizes), statistics.fmean(values)
    slope = sum((s - mean_size) * (v - mean_value) for s, v in zip(sizes, values, strict=True))
    slope /= sum((s - mean_size) ** 2 for s in sizes)
    return mean_value + slope * (at - mean_size)


def build_only(real_file: Path, args: argparse.Namespace, out: Path) -> None:
    """Build and save one index per size, then project peak RSS and build time."""
    params = {"centroids": args.centroids, "nbits": args.nbits[0], "rerank": args.rerank[0]}
    sizes, peaks, seconds = sorted(args.sizes), [], []
    for size in sizes:
        built = build_apart(real_file, size, params, out / f"plaid-{size}")
        print(described(size, built), flush=True)
        peaks.append(built["peak"] / GB)
        seconds.append(built["add_s"] + built["build_s"])
    if len(set(sizes)) > 1:
        print(
            f"projected to {args.project} documents (least-squares line over {sizes}): "
            f"peak RSS {projected(sizes, peaks, args.project):.2f} GB, "
            f"build {projected(sizes, seconds, args.project):.0f} s"
        )


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
    parser.add_argument("--build-only", action="store_true", help="build, save, print memory")
    parser.add_argument("--project", type=int, default=1_000_000, help="with --build-only")
    parser.add_argument("--out", type=Path, help="where indexes are saved (default: temporary)")
    args = parser.parse_args()

    start = time.perf_counter()
    real, queries = real_embeddings(args.real_documents, args.queries)
    print(
        f"encoded {len(real)} real documents and {len(queries)} queries in "
        f"{time.perf_counter() - start:.0f} s; torch threads {torch.get_num_threads()}"
    )
    with tempfile.TemporaryDirectory() as temporary:
        out = args.out or Path(temporary)
        out.mkdir(parents=True, exist_ok=True)
        real_file = out / "real.safetensors"
        lengths = torch.tensor([len(document) for document in real])
        save_file({"tokens": torch.cat(real), "lengths": lengths}, real_file)
        if args.build_only:
            build_only(real_file, args, out)
        else:
            search(real, queries, real_file, args, out)


def search(
    real: list[Tensor],
    queries: list[Tensor],
    real_file: Path,
    args: argparse.Namespace,
    out: Path,
) -> None:
    """Exact search and every PLAID setting asked, per size; then the table."""
    rows = []
    for size in sorted(args.sizes):
        ids = [f"d{i}" for i in range(size)]
        documents = [d for _, block in corpus_blocks(real, size) for d in block]
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
            params = {"centroids": args.centroids, "nbits": nbits, "rerank": keep}
            folder = out / f"plaid-{size}-{nbits}"
            built = build_apart(real_file, size, params, folder)
            print(described(size, built), flush=True)
            index = PlaidIndex.load(folder)
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
                        f"{built['add_s'] + built['build_s']:.0f} s, peak RSS "
                        f"{built['peak'] / GB:.1f} GB",
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
