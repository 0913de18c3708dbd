"""The toy operator folder the declared-experiment tests (test_generic, test_equivalent_forms)
run their hook-less declarations against."""

from __future__ import annotations

from pathlib import Path

import pytest

TOY = '''
import torch


def double(x):
    return x * 2


def double_ref(x):
    return x.float() * 2


def triple(x):
    return x * 3


def matmul(a, b):
    return a @ b


def matmul_ref(a, b):
    return a.float() @ b.float()
'''


@pytest.fixture
def toy_root(tmp_path: Path) -> Path:
    """A KB whose kernels/toy/ops.py is TOY."""
    # a KB's kernels folder with no __init__.py: its operator folders are still importable
    (tmp_path / "kernels" / "toy").mkdir(parents=True)
    (tmp_path / "kernels" / "toy" / "ops.py").write_text(TOY)
    return tmp_path
