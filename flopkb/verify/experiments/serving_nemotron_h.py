"""Serving hook for nemotron-h/faster-inference: 65,536 input / 1,024 output tokens; the paper's
batch is not recorded here, batch 1 is used.

The measurement and the judgement are `flopkb.verify.experiments.serving`'s; this module only
fixes the claim's conditions.
"""

from __future__ import annotations

from typing import Any

from flopkb.verify.experiments import serving
from flopkb.verify.experiments.serving import cpu_check, judge

__all__ = ["DEFAULTS", "cpu_check", "judge", "measure"]

DEFAULTS: dict[str, Any] = {
    "model": "nemotron-h-8b",
    "baseline_architecture": "llama-3-1-8b",
    "phase": "end_to_end",
    "input_tokens": 65536, "output_tokens": 1024, "batch": 1, "reading": "equal_batch",
    "accelerator": "h200-sxm", "max_batch": 64, "baseline": "llama-3-1-8b",
}


def measure(ctx: Any, cond: dict[str, Any]) -> serving.Measurement:
    return serving.measure(ctx, cond)
