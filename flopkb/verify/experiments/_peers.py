"""Peer implementations for `--impl peer`: imported only when asked, never bundled or copied.

mamba_ssm's package `__init__` imports its compiled CUDA extensions (selective_scan_cuda,
causal_conv1d), which a pure-Python wheel does not carry; its SSD kernels are plain Triton. So the
package is entered through an empty package module whose path is the installed folder, and only
`mamba_ssm.ops.triton.ssd_combined` (mamba_ssm's own code, unchanged) is imported.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from flopkb.verify.context import ExperimentError


def _mamba_chunk_scan_combined() -> Callable:
    if "mamba_ssm" not in sys.modules:
        spec = importlib.util.find_spec("mamba_ssm")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("mamba_ssm is not installed")
        folder = Path(next(iter(spec.submodule_search_locations)))
        package = types.ModuleType("mamba_ssm")
        package.__path__ = [str(folder)]
        sys.modules["mamba_ssm"] = package
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined

    return mamba_chunk_scan_combined


def mamba_ssd(chunk_size: int = 256) -> tuple[Callable, str]:
    """mamba_ssm's `mamba_chunk_scan_combined` with the SSD kernels' argument order."""
    try:
        combined = _mamba_chunk_scan_combined()
    except Exception as exc:
        raise ExperimentError(
            f"peer mamba_ssm not importable ({type(exc).__name__}: {exc})"
        ) from exc

    def run(x, dt, A, Bm, Cm, Dskip=None):
        return combined(x, dt, A, Bm, Cm, chunk_size, D=Dskip)

    try:
        version = metadata.version("mamba_ssm")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return run, f"peer:mamba_ssm {version} mamba_chunk_scan_combined (chunk {chunk_size})"
