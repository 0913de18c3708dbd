"""What the kernel tests' module fixtures share: one operator's modules as one namespace, and
the mark of a test that needs a GPU (the CPU runs the rest through the Triton interpreter)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kernelpkg import load_op

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def op_modules(op: str, *names: str, **renamed: str) -> SimpleNamespace:
    """`kernels/<op>/<name>.py` for each name, as attributes of that name; `renamed` gives a
    module another attribute name (ops="forward"). Call it from a fixture that takes `kernels`,
    which imports the package first."""
    attributes = {name: name for name in names} | renamed
    return SimpleNamespace(**{attr: load_op(op, module) for attr, module in attributes.items()})
