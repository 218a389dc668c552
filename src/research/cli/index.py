"""`research-index`: build a search index over a BEIR corpus with a trained run's ColBERT.

    research-index <run dir> <BEIR folder> <out folder> [--kind plaid] [--ckpt best]
                   [--param nbits=4 --param centroids=4096] [--batch-size 64]

The run's own saved config says which network to rebuild; its checkpoint (best by default) gives
the weights. Every document of `<BEIR folder>/corpus.jsonl` is encoded (with a progress bar) and
added to a searcher of `--kind` (default: the run's `model.search.kind`, with its parameters),
saved in `<out folder>`, which must not exist yet; load it with
`research.retrieval.load_searcher`. The same from Python: `research.run.index.build_index`.
A wrong argument is one line on stderr and exit status 2, before torch is imported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from research.config.errors import ConfigError


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """`name=value` pairs with YAML-typed values (4 -> int, 0.5 -> float, true -> bool)."""
    import yaml

    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--param {pair!r} must be name=value, e.g. --param nbits=4")
        params[name] = yaml.safe_load(value)
    return params


def check_arguments(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The searcher kind and parameters to build, checked against their declaration; the run
    dir, its checkpoint, the corpus and the output are checked too, all before torch loads."""
    from research.config.saved_run import saved_run_config
    from research.retrieval.configs import check_search
    from research.run.preflight import eval_checkpoint

    run_dir, corpus, out = Path(args.run_dir), Path(args.corpus), Path(args.out)
    if not (corpus / "corpus.jsonl").is_file():
        raise ConfigError(f"corpus {corpus} has no corpus.jsonl; give a BEIR folder")
    if out.exists():
        raise ConfigError(f"out {out} already exists; give a new folder (nothing is overwritten)")
    config = saved_run_config(run_dir)
    eval_checkpoint(run_dir.expanduser().resolve(), args.ckpt)
    search = dict(config.get("model", {}).get("search") or {})
    if args.kind is not None and args.kind != search.get("kind", "exact"):
        search = {"kind": args.kind}
    search.update(parse_params(args.param))
    search.pop("k", None)
    check_search("", search)
    return search.pop("kind", "exact"), search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="research-index", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a research-train run dir (its .hydra/ and checkpoints/)")
    parser.add_argument("corpus", help="a BEIR folder holding corpus.jsonl")
    parser.add_argument("out", help="the folder to save the index in (must not exist)")
    parser.add_argument("--kind", default=None, help="exact, voyager or plaid (default: the run's)")
    parser.add_argument(
        "--param", action="append", default=[], help="searcher parameter name=value"
    )
    parser.add_argument("--ckpt", default="best", help="best, last or a .ckpt path")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    try:
        kind, params = check_arguments(args)
    except (ConfigError, FileNotFoundError) as err:
        print(f"research-index: error: {err}", file=sys.stderr)
        return 2
    from research.run.index import build_index

    searcher = build_index(
        args.run_dir, args.corpus, args.out, kind, params, args.ckpt, args.batch_size
    )
    print(f"research-index: {searcher!r} saved in {args.out}")
    return 0


def entry() -> None:
    sys.exit(main())
