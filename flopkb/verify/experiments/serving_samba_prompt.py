"""Serving hook for samba/prompt-throughput: prompt processing at 128K, batch 1 (one 128K prompt
per measurement, Samba paper Sec. 3.3).

The measurement and the judgement are `flopkb.verify.experiments.serving`'s; this module only
fixes the claim's conditions.
"""

from __future__ import annotations

from typing import Any

from flopkb.verify.experiments import serving
from flopkb.verify.experiments.serving import cpu_check, judge

__all__ = ["DEFAULTS", "cpu_check", "judge", "measure"]

DEFAULTS: dict[str, Any] = {
    "model": "samba-1-7b",
    "baseline_architecture": "llama-3-1-6b-samba-baseline",
    "phase": "prefill",
    "prompt_length": "128K", "batch": 1, "reading": "equal_batch",
    "accelerator": "h200-sxm", "max_batch": 64, "baseline": "llama-3-1-6b-samba-baseline",
}


def measure(ctx: Any, cond: dict[str, Any]) -> serving.Measurement:
    return serving.measure(ctx, cond)
