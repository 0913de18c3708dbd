"""Shared setup for kernel tests: Triton's CPU interpreter when no GPU, the kernel package, seeds.

TRITON_INTERPRET must be set before triton is first imported, so it is set here at import time.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from flopkb.kernelpkg import load_kernels


@pytest.fixture(scope="session")
def kernels():
    """The bundled kernels folder, imported as the package `flopkb_kernels`."""
    return load_kernels()


@pytest.fixture(scope="session")
def device() -> torch.device:
    """Where kernel inputs live: the GPU when there is one, else the CPU (interpreter mode)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture(autouse=True)
def _fixed_seed() -> None:
    # Every kernel test draws its inputs from the same seed, so a failure reproduces exactly.
    torch.manual_seed(0)
