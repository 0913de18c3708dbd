"""The device clock shared by `flopkb verify` and `bench/`: time what the GPU does, not the host.

Method (docs/verify.md, "How verify times"):

- Warm up until compilation and autotuning are out of the way; estimate one call's device time
  from a short eager loop, and how long the host takes to enqueue it.
- **graph** (the default wherever capture works): capture ONE CUDA graph holding `calls`
  back-to-back calls, cycling through the argument sets (rotation keeps each set out of L2 before
  it is reused), and time its replays between event pairs; a sample is one replay's time divided
  by `calls`. A replay is launched by the host once, so the host's launch rate never shows in it.
  Capture refuses host synchronisation, data-dependent allocation and host work inside the call:
  for decode steps a failed capture is a stated refusal (`require_graph`, `CaptureRefused`),
  never a silent fallback.
- **loop** (only where capture fails and the caller accepts it): `calls` eager calls queued back
  to back between one event pair, do_bench style. When the host needs longer to enqueue a call
  than the device needs to run it, the loop measures the host's pace: the timing says so
  (`launch_bound`), and the figure is an upper bound on the device time.
- Where a graph was timed, an eager loop is timed beside it (`eager_*`): when the two differ by
  more than the graphed spread both are kept and the graphed one is what a verdict reads.
- A graph is not always neutral: captured, a device-to-device `copy_` becomes a memcpy node on a
  copy engine and cuBLAS may pick another kernel (H200 calibration evidence of 2026-12-04: 2 GiB
  copy 1.59 ms graphed vs 1.01 ms eager; 8192^3 bf16 GEMM 1.60 vs 1.38 ms). So when the eager
  loop is *faster* than the graph beyond the spread and is not launch-bound, the graph changed
  the work: the eager loop (an honest device clock there) is the timing and the graphed figures
  are kept beside it (`graph_*`). Decode steps (`require_graph`) are always judged on the graph, as
  serving engines run them.

Order statistics (median, p10, p90), never a mean, so a stray slow sample does not move a figure.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

# One sample should hold about this much device work: long enough that the event pair's own
# cost (a few microseconds) is lost in it, short enough that a budget holds many samples.
SAMPLE_MS = 1.0
# At most this many calls captured in one graph (each captured call keeps its outputs' memory
# in the graph's pool only until the next call reuses it, but capture time grows with it).
MAX_CALLS = 256
# The host counts as the bottleneck of an eager loop when enqueueing a call takes at least this
# fraction of the call's device time.
LAUNCH_BOUND_RATIO = 0.9


class CaptureRefused(RuntimeError):
    """The call cannot be captured in a CUDA graph (a host sync, a data-dependent allocation or
    other host work inside it) and its timing needs the graph."""


@dataclass(frozen=True)
class Timing:
    """Order statistics of one timed callable, in milliseconds per call, and how they were taken.

    `method`: "graph" (replays of a captured graph of `calls` calls), "loop" (`calls` eager calls
    back to back per sample) or "events" (one eager call per event pair: only for the synthetic
    timers of tests and for work long enough that launch gaps cannot matter).
    `host_ms`: the host's enqueue time per eager call, measured during warm-up.
    `eager_median_ms` / `eager_p10_ms` / `eager_p90_ms`: the eager loop timed beside a graph,
    kept only when it differs from the graphed figure by more than the graphed spread.
    `launch_bound`: an eager figure that measured the host's pace rather than the device.
    `graph_median_ms` / `graph_p10_ms` / `graph_p90_ms`: a graph replay slower than a device-bound
    eager loop, kept beside the eager timing it lost to.
    """

    median_ms: float
    p10_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float
    reps: int
    method: str = "events"
    calls: int = 1
    host_ms: float | None = None
    eager_median_ms: float | None = None
    eager_p10_ms: float | None = None
    eager_p90_ms: float | None = None
    launch_bound: bool = False
    graph_median_ms: float | None = None
    graph_p10_ms: float | None = None
    graph_p90_ms: float | None = None
    note: str | None = None

    @property
    def rel_spread(self) -> float:
        """(p90 - p10) / median: the noise band used by the verdict rule."""
        return (self.p90_ms - self.p10_ms) / self.median_ms if self.median_ms > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v is not None and v is not False}
        return out | {"rel_spread": self.rel_spread}


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    position = q * (len(sorted_values) - 1)
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * (position - lower)


def summarize(samples_ms: Sequence[float], method: str = "events", **how: Any) -> Timing:
    """Order statistics of raw per-call times; `how` fills the method fields of `Timing`."""
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
        **how,
    )


def calls_per_sample(per_call_ms: float) -> int:
    """How many calls one sample holds so that it runs about SAMPLE_MS of device work."""
    if per_call_ms <= 0 or not math.isfinite(per_call_ms):
        return MAX_CALLS
    return max(1, min(MAX_CALLS, math.ceil(SAMPLE_MS / per_call_ms)))


def sample_count(per_call_ms: float, calls: int, reps: int, budget_ms: float) -> int:
    """Samples that fit in `budget_ms` of device time (at least 5, at most `reps`)."""
    per_sample = max(per_call_ms * calls, 1e-6)
    return max(5, min(reps, int(budget_ms / per_sample)))


def launch_bound(host_ms: float, device_ms: float) -> bool:
    """Whether an eager loop of this call runs at the host's pace rather than the device's."""
    return device_ms > 0 and host_ms >= LAUNCH_BOUND_RATIO * device_ms


def differs(graphed: Timing, eager: Timing) -> bool:
    """The eager figure lies outside the graphed one's p10..p90 band widened by its own."""
    band = max(graphed.p90_ms - graphed.p10_ms, eager.p90_ms - eager.p10_ms)
    return abs(eager.median_ms - graphed.median_ms) > band


def _capture(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], calls: int) -> Any:
    """One CUDA graph of `calls` back-to-back calls of `fn`, cycling through `arg_sets`."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(*arg_sets[0])
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    return graph


def _eager_loop(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], calls: int,
                start: int = 0) -> None:
    for i in range(calls):
        fn(*arg_sets[(start + i) % len(arg_sets)])


def _samples(run_one: Callable[[], None], count: int, calls: int) -> list[float]:
    """`count` samples of `run_one` (which does `calls` calls), each between its own events,
    queued back to back and synchronised once."""
    import torch

    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(count)]
    for start, end in events:
        start.record()
        run_one()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) / calls for start, end in events]


def _warm(fn: Callable[..., Any], arg_sets: Sequence[tuple[Any, ...]], warmup: int
          ) -> tuple[float, float]:
    """(device ms per call, host enqueue ms per call) from an eager loop of `warmup` calls."""
    import torch

    first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    first.record()
    began = time.perf_counter()
    _eager_loop(fn, arg_sets, warmup, start=1)
    host = (time.perf_counter() - began) * 1e3 / warmup
    last.record()
    last.synchronize()
    return max(first.elapsed_time(last) / warmup, 1e-6), host


def time_cuda(
    fn: Callable[..., Any],
    arg_sets: Sequence[tuple[Any, ...]],
    *,
    warmup: int = 5,
    reps: int = 50,
    budget_ms: float = 2000.0,
    graph: bool = True,
    require_graph: bool = False,
) -> Timing:
    """Time `fn(*args)` on the device, cycling through `arg_sets` (rotation defeats L2).

    `graph=True` (default): CUDA-graph replay of `calls` back-to-back calls per sample, the
    eager loop timed beside it; when capture fails, `require_graph` raises `CaptureRefused`,
    otherwise the eager loop is the timing (method "loop", with the reason in `note`).
    `graph=False`: the eager loop only (for callables that replay a graph themselves, or whose
    effect on state must happen eagerly). The number of samples is cut so that they spend about
    `budget_ms` of device time (at least 5), so a slow variant cannot eat the run's time limit.
    """
    import torch

    if not arg_sets:
        raise ValueError("expected at least one argument set, got none")
    warmup = max(1, warmup)
    # The first call compiles / autotunes; it stays out of every estimate.
    fn(*arg_sets[0])
    torch.cuda.synchronize()
    per_call, host = _warm(fn, arg_sets, warmup)
    calls = calls_per_sample(per_call)
    count = sample_count(per_call, calls, reps, budget_ms)
    note = None
    captured = None
    if graph:
        try:
            captured = _capture(fn, arg_sets, calls)
        except Exception as exc:
            torch.cuda.synchronize()
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if require_graph:
                raise CaptureRefused(f"not capturable in a CUDA graph ({reason})") from exc
            note = f"graph capture failed, timed as an eager loop ({reason})"
    position = [0]

    def eager_once() -> None:
        _eager_loop(fn, arg_sets, calls, start=position[0])
        position[0] += calls

    eager_samples = _samples(eager_once, count if captured is None else max(5, count // 3),
                             calls)
    eager = summarize(eager_samples, "loop", calls=calls, host_ms=host,
                      launch_bound=launch_bound(host, statistics.median(eager_samples)))
    if captured is None:
        return summarize(eager_samples, "loop", calls=calls, host_ms=host,
                         launch_bound=eager.launch_bound, note=note)
    graphed = summarize(_samples(captured.replay, count, calls), "graph", calls=calls,
                        host_ms=host)
    del captured
    return judged(graphed, eager, require_graph)


def judged(graphed: Timing, eager: Timing, require_graph: bool = False) -> Timing:
    """The timing a verdict reads from a graph replay and the eager loop timed beside it: the
    graph, unless the device-bound eager loop beat it beyond the spread (the capture changed the
    work) and the call is not a decode step, which serving runs as a graph."""
    if (not require_graph and not eager.launch_bound and differs(graphed, eager)
            and eager.median_ms < graphed.median_ms):
        return replace(eager, graph_median_ms=graphed.median_ms, graph_p10_ms=graphed.p10_ms,
                       graph_p90_ms=graphed.p90_ms,
                       note="graph replay slower than the device-bound eager loop beyond the "
                            "spread (the capture changed the work): judged on the eager loop")
    return with_eager(graphed, eager)


def with_eager(graphed: Timing, eager: Timing) -> Timing:
    """The graphed timing, carrying the eager figures when the two differ beyond their spread
    (a verdict reads the graphed one; the eager one says how far launch gaps would have moved
    it)."""
    if not differs(graphed, eager):
        return graphed
    return replace(graphed, eager_median_ms=eager.median_ms, eager_p10_ms=eager.p10_ms,
                   eager_p90_ms=eager.p90_ms, launch_bound=eager.launch_bound,
                   note="eager and graphed figures differ by more than their spread: judged on "
                        "the graphed one")


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


def kernel_timeline(fn: Callable[..., Any], args: tuple, reps: int) -> dict[str, float]:
    """Device ms per kernel name summed over `reps` calls of fn(*args) after one warm-up call,
    from the CUDA kernel timeline (torch.profiler, CUPTI): which kernels a call's time goes to."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn(*args)
        torch.cuda.synchronize()
    out: dict[str, float] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            out[event.name] = out.get(event.name, 0.0) + event.device_time / 1e3
    return out
