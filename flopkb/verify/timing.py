"""Device-event timing shared by `flopkb verify` and `bench/`.

Method (see README "How verify times"): warm up until compilation and autotuning are out of the
way, then time each repetition with CUDA events, rotating over several input sets when one set
would sit in L2, and report order statistics rather than a mean so that a stray slow launch does
not move the figure.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Order statistics of one timed callable, in milliseconds."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float
    reps: int

    @property
    def rel_spread(self) -> float:
        """(p90 - p10) / median: the noise band used by the verdict rule."""
        return (self.p90_ms - self.p10_ms) / self.median_ms if self.median_ms > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"rel_spread": self.rel_spread}


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    position = q * (len(sorted_values) - 1)
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * (position - lower)


def summarize(samples_ms: Sequence[float]) -> Timing:
    """Order statistics of raw per-repetition times."""
    if not samples_ms:
        raise ValueError("expected at least one timing sample, got none")
    ordered = sorted(samples_ms)
    return Timing(
        median_ms=statistics.median(ordered),
        p10_ms=_quantile(ordered, 0.10),
        p90_ms=_quantile(ordered, 0.90),
        min_ms=ordered[0],
        max_ms=ordered[-1],
        reps=len(ordered),
    )


def time_cuda(
    fn: Callable[..., Any],
    arg_sets: Sequence[tuple[Any, ...]],
    *,
    warmup: int = 5,
    reps: int = 50,
    budget_ms: float = 2000.0,
) -> Timing:
    """Time `fn(*args)` with CUDA events, cycling through `arg_sets` (rotate to defeat L2).

    Repetitions stop early once `budget_ms` of device time is spent (at least 5 are kept), so a
    slow variant cannot eat the run's time limit.
    """
    import torch

    if not arg_sets:
        raise ValueError("expected at least one argument set, got none")
    for i in range(warmup):
        fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    samples: list[float] = []
    spent = 0.0
    for i in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = arg_sets[i % len(arg_sets)]
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end)
        samples.append(elapsed)
        spent += elapsed
        if spent > budget_ms and len(samples) >= 5:
            break
    return summarize(samples)
