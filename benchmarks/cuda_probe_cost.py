"""What Lightning's `PYTORCH_NVML_BASED_CUDA_CHECK=1` costs an optimizer step where torch sees no
GPU, and so what `research.run.cuda_probe` saves a run by unsetting it there.

The default CNN's Adam step (gradients set once, no forward or backward: only the step, whose
CUDA-graph capture check asks whether CUDA is available) and `torch.cuda.is_available()` alone,
with the variable set and unset, in interleaved pairs. Prints microseconds a call of each, median
(min-max), and the median ratio set/unset with min-max.

    python benchmarks/cuda_probe_cost.py [--pairs 7] [--calls 2000]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import torch
from overhead import CNN_ARGS, spread  # beside this file

from research.models.cnn import CNN
from research.run.cuda_probe import NVML_CHECK


def _per_call_us(call: Callable[[], object], calls: int, nvml_check: bool) -> float:
    if nvml_check:
        os.environ[NVML_CHECK] = "1"
    else:
        os.environ.pop(NVML_CHECK, None)
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    net = CNN(**CNN_ARGS)
    for p in net.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-6)
    optimizer.step()  # its state, once
    print(
        f"torch {torch.__version__} (CUDA build: {torch.version.cuda or 'no'}), "
        f"GPUs seen: {torch.cuda.device_count()}; {args.pairs} interleaved pairs of "
        f"{args.calls} calls; us a call, median (min-max)"
    )
    for name, call in (
        ("Adam step, default CNN", optimizer.step),
        ("is_available", torch.cuda.is_available),
    ):
        with_check, without = [], []
        for _ in range(args.pairs):
            with_check.append(_per_call_us(call, args.calls, nvml_check=True))
            without.append(_per_call_us(call, args.calls, nvml_check=False))
        ratios = [a / b for a, b in zip(with_check, without, strict=True)]
        print(
            f"{name}: with {NVML_CHECK}=1 {spread(with_check, '.1f')}, without "
            f"{spread(without, '.1f')}; ratio {spread(ratios, '.2f')}"
        )


if __name__ == "__main__":
    main()
