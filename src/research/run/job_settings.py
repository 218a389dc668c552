"""The process-wide torch and Lightning settings a job runs under, made in one place so that
`research-eval` scores a checkpoint under the settings `research-train` trained it under."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from research import compat
from research.run.cuda_probe import drop_nvml_check_without_gpus
from research.run.matmul_precision import float32_matmul_precision
from research.tracking.record import RunRecord


@contextmanager
def job_settings(config: Mapping[str, Any], record: RunRecord) -> Iterator[None]:
    """Apply the settings of one job's resolved `config` and record the float32 matmul precision
    in effect in its metrics.json; the precision is put back afterwards (the jobs of a multirun
    share a process). The other two only skip work that cannot change a result, so they stay
    for the process."""
    drop_nvml_check_without_gpus()  # on a CPU: an Adam step of the default CNN, 254 us less
    compat.apply_patches("job")  # e.g. each self.log: 519 us -> 102 us on a CPU
    with float32_matmul_precision(config.get("float32_matmul_precision")) as used:
        record.fields["float32_matmul_precision"] = used
        yield
