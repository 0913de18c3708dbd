"""mamba_ssm's Triton SSD (`mamba_chunk_scan_combined`), its package `__init__` bypassed.

mamba_ssm's `__init__` imports its compiled CUDA extensions (selective_scan_cuda, causal_conv1d),
which a pure-Python install does not carry; its SSD kernels are plain Triton. So the package is
entered through an empty package module whose path is the installed folder, and only
`mamba_ssm.ops.triton.ssd_combined` (mamba_ssm's own code, unchanged) is imported.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path

from flopkb.verify.errors import PeerUnavailable
from flopkb.verify.peers import version


def _enter_package() -> None:
    if "mamba_ssm" not in sys.modules:
        spec = importlib.util.find_spec("mamba_ssm")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("mamba_ssm is not installed")
        package = types.ModuleType("mamba_ssm")
        package.__path__ = [str(Path(next(iter(spec.submodule_search_locations))))]
        sys.modules["mamba_ssm"] = package


def state_update() -> tuple[Callable, str]:
    """(selective_state_update, 'mamba_ssm <version>'): the Triton decode step of Mamba-1 and
    Mamba-2 (mamba_ssm.ops.triton.selective_state_update)."""
    try:
        _enter_package()
        from mamba_ssm.ops.triton.selective_state_update import selective_state_update
    except Exception as exc:
        raise PeerUnavailable(
            f"mamba_ssm not importable ({type(exc).__name__}: {exc})") from exc
    return selective_state_update, f"mamba_ssm {version('mamba_ssm')}"


def chunk_scan_combined() -> tuple[Callable, str]:
    """(mamba_chunk_scan_combined, 'mamba_ssm <version>')."""
    try:
        _enter_package()
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    except Exception as exc:
        raise PeerUnavailable(
            f"mamba_ssm not importable ({type(exc).__name__}: {exc})") from exc
    return mamba_chunk_scan_combined, f"mamba_ssm {version('mamba_ssm')}"
