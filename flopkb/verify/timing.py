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
    method: str = "events"

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


def summarize(samples_ms: Sequence[float], method: str = "events") -> Timing:
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
        method=method,
    )


def _capture(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]]) -> list[Any]:
    """One CUDA graph per argument set, each replaying `fn(*args)` (already warmed up)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(*arg_sets[0])
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graphs = []
    for args in arg_sets:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(*args)
        graphs.append(graph)
    torch.cuda.synchronize()
    return graphs


def time_cuda(
    fn: Callable[..., Any],
    arg_sets: Sequence[tuple[Any, ...]],
    *,
    warmup: int = 5,
    reps: int = 50,
    budget_ms: float = 2000.0,
    graph: bool = False,
) -> Timing:
    """Time `fn(*args)` with CUDA events, cycling through `arg_sets` (rotate to defeat L2).

    The warm-up runs are timed as a whole to estimate one call; the number of repetitions is then
    cut so that they spend about `budget_ms` of device time (at least 5 are kept), so a slow
    variant cannot eat the run's time limit. All repetitions are queued back to back, each between
    its own pair of events, and synchronised once at the end: the host's launch overhead overlaps
    the device work instead of sitting inside every sample.

    `graph=True` captures each call in a CUDA graph and times its replays (method "graph"): for
    work of a few microseconds, where the host's launch jitter would otherwise be the measurement.
    If capture fails the eager timing is used (method "events").
    """
    import torch

    if not arg_sets:
        raise ValueError("expected at least one argument set, got none")
    warmup = max(1, warmup)
    # The first call compiles / autotunes; it stays out of the estimate.
    fn(*arg_sets[0])
    torch.cuda.synchronize()
    method = "events"
    calls: list[Callable[[], Any]] = [lambda args=args: fn(*args) for args in arg_sets]
    if graph:
        try:
            graphs = _capture(fn, arg_sets)
            calls = [g.replay for g in graphs]
            method = "graph"
        except Exception:
            # Not capturable (host syncs, allocations the capture refuses): time it eagerly.
            torch.cuda.synchronize()
    first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    first.record()
    for i in range(warmup):
        calls[(i + 1) % len(calls)]()
    last.record()
    last.synchronize()
    per_call = max(first.elapsed_time(last) / warmup, 1e-6)
    count = max(5, min(reps, int(budget_ms / per_call)))
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(count)
    ]
    for i, (start, end) in enumerate(events):
        start.record()
        calls[i % len(calls)]()
        end.record()
    torch.cuda.synchronize()
    return summarize([start.elapsed_time(end) for start, end in events], method)


def memory_mark() -> int | None:
    """Device bytes allocated now, with the peak counter reset; None without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    return int(torch.cuda.memory_allocated())


def memory_since(mark: int | None) -> dict[str, int]:
    """Peak device memory since `memory_mark`: the total and what the timed step added on top
    of what was already allocated (its inputs), as `torch.cuda.max_memory_allocated` sees it."""
    if mark is None:
        return {}
    import torch

    peak = int(torch.cuda.max_memory_allocated())
    return {"peak_mem_bytes": peak, "step_extra_mem_bytes": peak - mark}
