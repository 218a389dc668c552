"""Lightning's NVML-based CUDA check is dropped where torch sees no GPU, and kept where it does."""

from __future__ import annotations

import os

import pytest
import torch

from research.run.cuda_probe import NVML_CHECK, drop_nvml_check_without_gpus


def test_without_gpus_the_check_is_dropped(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(NVML_CHECK, "1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert drop_nvml_check_without_gpus()
    assert NVML_CHECK not in os.environ
    assert not drop_nvml_check_without_gpus()  # nothing left to drop


def test_with_a_gpu_the_check_stays(monkeypatch: pytest.MonkeyPatch):
    """On a GPU machine it keeps CUDA uninitialized before a fork, as Lightning wants."""
    monkeypatch.setenv(NVML_CHECK, "1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert not drop_nvml_check_without_gpus()
    assert os.environ[NVML_CHECK] == "1"
