"""The machine fingerprint stored with every measurement (evidence and bench results), and the
accelerator record it is."""

from __future__ import annotations

import platform
import subprocess
from typing import Any

from flopkb.grammar.matching import matches


def _nvidia_smi(query: str, index: int = 0) -> str | None:
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--id={index}", f"--query-gpu={query}",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return done.stdout.strip().splitlines()[0]


def fingerprint() -> dict[str, Any]:
    """GPU name, SM count, memory, driver, CUDA, torch, triton, python and clocks where readable.

    Returns `{"gpu": None, ...}` on a machine without CUDA; never raises for a missing tool.
    """
    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import torch
    except ImportError:
        return info | {"gpu": None, "torch": None}
    info["torch"] = torch.__version__
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    if not torch.cuda.is_available():
        return info | {"gpu": None}
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    info |= {
        "gpu": props.name,
        "gpu_index": index,
        "gpu_count": torch.cuda.device_count(),
        "sm_count": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "compute_capability": f"{props.major}.{props.minor}",
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "cuda": torch.version.cuda,
        "driver": _nvidia_smi("driver_version", index),
        "clocks_mhz": _nvidia_smi("clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem", index),
    }
    return info


def match_accelerator(kb, gpu_name: str | None) -> str | None:
    """The accelerator record whose `match` regexes (case-insensitive) match the GPU name.

    Patterns are compiled under `flopkb.grammar.matching`'s bounds: one that validation refuses
    (FKB420) matches nothing here, and matching never raises.
    """
    if not gpu_name:
        return None
    for acc_id, acc in sorted(kb.accelerators.items()):
        if matches(acc.match, gpu_name):
            return acc_id
    return None
