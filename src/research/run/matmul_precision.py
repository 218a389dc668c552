"""`float32_matmul_precision`: how float32 matrix products run on GPUs that have faster
kinds (TF32 on Ampere and later), which torch leaves at "highest" (full float32) and Lightning
only hints at changing, in code a config-driven run does not have."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def float32_matmul_precision(precision: str | None) -> Iterator[str]:
    """torch's float32 matmul precision set to `precision` for one job, and put back after it:
    the jobs of a multirun share a process, and a job that leaves it unset must not inherit the
    previous job's. Yields the precision in effect (null leaves the process's own)."""
    import torch

    before = torch.get_float32_matmul_precision()
    if precision is not None:
        torch.set_float32_matmul_precision(precision)
    try:
        yield torch.get_float32_matmul_precision()
    finally:
        torch.set_float32_matmul_precision(before)
