"""Keep torch's "is CUDA available?" cheap on a machine without GPUs.

Lightning sets `PYTORCH_NVML_BASED_CUDA_CHECK=1` when imported, so that asking whether CUDA is
available asks NVML instead of initializing CUDA in a process that may fork. torch asks at every
optimizer step (the CUDA-graph capture check of `Optimizer.step`), and under that variable each
answer loads NVML anew: where there is no NVIDIA driver (a CPU machine with PyPI's CUDA build of
torch, as on Linux by default) the load fails every time and torch then calls
`cudaGetDeviceCount` anyway. `benchmarks/cuda_probe_cost.py` on a 2-core CPU: an Adam step of
the default CNN took 1,093 us with the variable and 839 us without; `is_available` 127 us and
2.7 us."""

from __future__ import annotations

import os

NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def drop_nvml_check_without_gpus() -> bool:
    """Unset Lightning's NVML-based check where torch sees no GPU: with no device there is no
    CUDA state for a fork to inherit, which is all the variable protects. Returns whether it
    was dropped; on a machine with GPUs it stays."""
    import torch

    if os.environ.get(NVML_CHECK) != "1" or torch.cuda.device_count() > 0:
        return False
    del os.environ[NVML_CHECK]
    return True
