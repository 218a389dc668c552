"""`model.compile=true`: the task's network through torch.compile, or one line saying why not.

torch.compile is lazy: a missing compiler would otherwise surface at the first training step as
a long inductor traceback. The checks here ask, before that step, for what the chosen device
needs: a C++ compiler for CPU kernels, Triton (and the C compiler it builds its launcher with)
and a GPU it supports for CUDA kernels.
"""

from __future__ import annotations

import os
import shutil
from importlib.util import find_spec

import torch
from torch import nn

from research import compat
from research.config.errors import ConfigError

# Triton's GPU compiler needs compute capability 7.0 (Volta) or newer.
_TRITON_MIN_CAPABILITY = (7, 0)


def compile_problem(device: torch.device) -> str | None:
    """Why torch.compile cannot build kernels for `device` here, or None when it can."""
    if device.type == "cpu":
        compilers = compat.inductor_cpp_compilers()
        if not any(shutil.which(c) for c in compilers):
            return (
                f"torch.compile finds no C++ compiler (looked for {', '.join(compilers)}); "
                "install g++ or set CXX to one"
            )
    if device.type == "cuda":
        if find_spec("triton") is None:
            return "torch.compile needs Triton for GPU kernels; pip install triton"
        capability = torch.cuda.get_device_capability(device)
        if capability < _TRITON_MIN_CAPABILITY:
            name = torch.cuda.get_device_name(device)
            return f"Triton needs a GPU of compute capability >= 7.0, {name} has {capability}"
        # Triton builds its kernel launcher with $CC, else gcc, else clang.
        if not (os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")):
            return "Triton finds no C compiler for its launcher; install gcc or set CC to one"
    return None


def compile_net(net: nn.Module, mode: str, device: torch.device) -> None:
    """Compile `net` in place (`nn.Module.compile`): the module and its parameter names stay
    the same, so checkpoints load with or without compilation. Raises a one-line ConfigError
    where it cannot work."""
    problem = compile_problem(device)
    if problem is None:
        try:
            net.compile(mode=mode)
        except RuntimeError as err:  # torch's own refusals, e.g. an unsupported Python
            problem = str(err).strip().splitlines()[0]
    if problem is not None:
        where = f"model.compile=true cannot work on {device.type}"
        raise ConfigError(f"{where}: {problem}, or set model.compile=false")
