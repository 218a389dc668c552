"""`research-index`: build a search index over a BEIR corpus with a trained run's ColBERT.

    research-index <run dir> <BEIR folder> <out folder> [--kind plaid] [--ckpt best]
                   [--param nbits=4 --param centroids=4096] [--batch-size 64] [--trust-run-dir]

The run's own saved config says which network to rebuild; its checkpoint (best by default) gives
the weights. Every document of `<BEIR folder>/corpus.jsonl` is encoded (with a progress bar) and
added to a searcher of `--kind` (default: the run's `model.search.kind`, with its parameters),
saved in `<out folder>`, which must not exist yet; load it with
`research.retrieval.load_searcher`. The same from Python: `research.run.index.build_index`.
Only declared components are built from the run's saved config unless `--trust-run-dir`.
A wrong argument is one line on stderr and exit status 2, before torch is imported; a build that
fails is one line and exit status 1; either way nothing is left in `<out folder>`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from research.cli.console_script import run_console_script
from research.cli.startup import imports_without_collections
from research.config.errors import ConfigError, one_line

PROG = "research-index"
OPT_IN = "--trust-run-dir"


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """`name=value` pairs with YAML-typed values (4 -> int, 0.5 -> float, true -> bool)."""
    import yaml

    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--param {pair!r} must be name=value, e.g. --param nbits=4")
        try:
            params[name] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(
                f"--param {pair!r}: {value!r} is not a YAML value; quote it, e.g. "
                f"--param '{name}=\"{value}\"'"
            ) from None
    return params


def _check_out(out: Path) -> None:
    """`out` is new, and its nearest existing parent is a folder this process can write in."""
    if out.exists():
        raise ConfigError(f"out {out} already exists; give a new folder (nothing is overwritten)")
    existing = out.absolute().parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"out {out}: {existing} is a file, not a folder; give a new folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise ConfigError(f"out {out}: cannot write in {existing} ({err.strerror})") from None


def check_arguments(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The searcher kind and parameters to build, checked against their declaration; the run
    dir, its checkpoint, the corpus and the output are checked too, all before torch loads."""
    from research.config.saved_run import saved_run_config
    from research.retrieval.configs import check_search
    from research.run.preflight import eval_checkpoint

    run_dir, corpus = Path(args.run_dir), Path(args.corpus)
    documents = corpus / "corpus.jsonl"
    if not documents.is_file():
        raise ConfigError(f"corpus {corpus} has no corpus.jsonl; give a BEIR folder")
    with documents.open("rb") as lines:
        if not any(line.strip() for line in lines):
            raise ConfigError(f"corpus {documents} holds no documents; give a BEIR corpus")
    _check_out(Path(args.out))
    if args.batch_size < 1:
        raise ConfigError(f"--batch-size {args.batch_size} must be at least 1")
    config = saved_run_config(run_dir, trust=args.trust_run_dir, opt_in=OPT_IN)
    if "search" not in config["model"]:
        raise ConfigError(
            f"run_dir={run_dir.expanduser().resolve()} trained {config['model']['_target_']}, "
            "which has no search index; give a retrieval run (e.g. experiment=colbert_stdlib)"
        )
    eval_checkpoint(run_dir.expanduser().resolve(), args.ckpt, option="--ckpt ")
    search = dict(config["model"]["search"] or {})
    if args.kind is not None and args.kind != search.get("kind", "exact"):
        search = {"kind": args.kind}
    search.update(parse_params(args.param))
    search.pop("k", None)
    check_search("", search)
    return search.pop("kind", "exact"), search


def _build(args: argparse.Namespace, kind: str, params: dict[str, Any]) -> int:
    """Build and save the index; a failure is one line, and leaves no `out` folder behind."""
    from research.run.signals import Interrupted, signals_raise

    with imports_without_collections():
        from research.run.index import build_index

    out = Path(args.out)
    try:
        with signals_raise():
            searcher = build_index(
                args.run_dir,
                args.corpus,
                out,
                kind,
                params,
                args.ckpt,
                args.batch_size,
                trust_run_dir=args.trust_run_dir,
            )
    except Interrupted as stop:
        shutil.rmtree(out, ignore_errors=True)
        print(f"{PROG}: interrupted by {stop.name}; nothing saved in {out}", file=sys.stderr)
        return stop.exit_code
    except (ConfigError, ValueError) as err:  # a corpus or checkpoint the user gave
        shutil.rmtree(out, ignore_errors=True)
        print(f"{PROG}: error: {one_line(err)}; nothing saved in {out}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - any other failure of the build is one line
        shutil.rmtree(out, ignore_errors=True)
        print(
            f"{PROG}: failed: {type(err).__name__}: {one_line(err)}; nothing saved in {out}",
            file=sys.stderr,
        )
        return 1
    print(f"{PROG}: {searcher!r} saved in {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a research-train run dir (its .hydra/ and checkpoints/)")
    parser.add_argument("corpus", help="a BEIR folder holding corpus.jsonl")
    parser.add_argument("out", help="the folder to save the index in (must not exist)")
    parser.add_argument("--kind", default=None, help="exact, voyager or plaid (default: the run's)")
    parser.add_argument(
        "--param", action="append", default=[], help="searcher parameter name=value"
    )
    parser.add_argument("--ckpt", default="best", help="best, last or a .ckpt path")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        OPT_IN,
        action="store_true",
        help="build whatever the run's saved config names (default: only declared components; "
        "a run dir from elsewhere could otherwise run any code)",
    )
    args = parser.parse_args(argv)
    try:
        kind, params = check_arguments(args)
    except (ConfigError, FileNotFoundError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    return _build(args, kind, params)


def entry() -> None:
    run_console_script(main)
