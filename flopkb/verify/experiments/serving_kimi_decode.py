"""Serving hook for kimi-linear/decoding-throughput: decoding at a 1M context; the quoted 6x
includes the larger batch the smaller cache allows, so the verdict reads the memory-limited
batch and reports batch 1 beside it.

The measurement and the judgement are `flopkb.verify.experiments.serving`'s; this module only
fixes the claim's conditions.
"""

from __future__ import annotations

from typing import Any

from flopkb.verify.experiments import serving
from flopkb.verify.experiments.serving import cpu_check, judge

__all__ = ["DEFAULTS", "cpu_check", "judge", "measure"]

DEFAULTS: dict[str, Any] = {
    "model": "kimi-linear-48b-a3b",
    "baseline_architecture": "kimi-mla-48b-a3b-baseline",
    "phase": "decode",
    "context_length": "1M", "batch": 1, "reading": "memory_limited",
    "accelerator": "h200-sxm", "max_batch": 64, "baseline": "kimi-mla-48b-a3b-baseline",
}


def measure(ctx: Any, cond: dict[str, Any]) -> serving.Measurement:
    return serving.measure(ctx, cond)
