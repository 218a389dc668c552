"""What checking a sweep and planning an ablation cost with the jobs sharing compositions
(`research.config.shared_compositions`) and with Hydra composing every job.

Two workloads, each timed in interleaved pairs (shared, then one composition per job) in this
process, after one untimed call of each:
- ablation: `research.ablation.plan.plan` of a conf/ablation spec (every job composed, validated,
  its run id computed), as `research-ablate --dry-run` plans it;
- sweep: `compose_all` and `validate` of a multirun command line, as `research-train -m` checks
  it before Hydra launches a job.

Prints seconds a workload of each, median (min-max), and the median ratio with min-max.

    python benchmarks/shared_compositions.py [--pairs 7] [--ablation transformer_norm_position]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator

from overhead import spread  # beside this file

from research.ablation import plan as planning
from research.ablation.spec import load_ablation
from research.config import compose as composing
from research.config.validate import validate

SWEEP = ["seed=0,1,2,3,4,5,6,7", "optimizer.lr=1e-3,3e-3,1e-2", "model.net.dropout=0.1,0.3"]


@contextlib.contextmanager
def _per_job() -> Iterator[None]:
    """Every job composed by Hydra, as before compositions were shared."""
    scope, compose_job = planning.shared_compositions, composing.compose_job
    planning.shared_compositions = contextlib.nullcontext  # type: ignore[assignment]
    composing.compose_job = lambda name, combo, compose: compose(name, combo)
    try:
        yield
    finally:
        planning.shared_compositions, composing.compose_job = scope, compose_job


def _seconds(work: Callable[[], object], per_job: bool) -> float:
    with _per_job() if per_job else contextlib.nullcontext():
        start = time.perf_counter()
        work()
        return time.perf_counter() - start


def _compare(label: str, work: Callable[[], object], pairs: int) -> None:
    _seconds(work, False)
    _seconds(work, True)
    shared, per_job = [], []
    for _ in range(pairs):
        shared.append(_seconds(work, False))
        per_job.append(_seconds(work, True))
    ratios = [b / a for a, b in zip(shared, per_job, strict=True)]
    print(
        f"{label}: shared {spread(shared, '.2f')} s, per job {spread(per_job, '.2f')} s; "
        f"per job / shared {spread(ratios, '.2f')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--ablation", default="transformer_norm_position")
    args = parser.parse_args()
    spec = load_ablation(args.ablation)
    jobs = len(planning.plan(args.ablation, spec, []))
    print(f"{args.pairs} interleaved pairs")
    _compare(
        f"ablation {args.ablation} ({jobs} jobs)",
        lambda: planning.plan(args.ablation, spec, []),
        args.pairs,
    )
    combos = len(composing.expand(SWEEP))
    _compare(
        f"sweep {' '.join(SWEEP)} ({combos} configs checked)",
        lambda: [validate(c, entry="train") for c in composing.compose_all("train", SWEEP)],
        args.pairs,
    )


if __name__ == "__main__":
    main()
