"""B4: chunked SSD time over the chunk size Q; is the claimed default (Q = 64) the best?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row, size_of
from flopkb.evidence.stats import ratio_interval

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/chunk-size-sweep.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}
CHUNKS = (32, 64, 128, 256)
TOLERANCE = 0.10


def cpu_check(ctx: Context) -> None:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    k = ssd_bench.kernels()
    args = ssd_bench.ssd_inputs(1, 70, 2, 16, 16, dtype=torch.float32)
    want = k["reference"].ssd_reference(*args)
    for q in (32, 64):
        ctx.check(f"ssd.chunked.ssd_chunked[Q={q}]", k["chunked"].ssd_chunked(*args, chunk_size=q),
                  want)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    steps, n0 = size_of(cond["seq_len"]), int(cond["state_dim"])
    rows = []
    best: dict[int, Any] = {}
    for dstate in [n0] + ([] if ctx.quick else [128 if n0 != 128 else 64]):
        shape = ssd_bench.shape_of(cond, steps, dstate)
        args = ssd_bench.make(ctx, shape)
        timings = {}
        for q, guarded in ctx.sweep(CHUNKS, rows):
            with guarded:
                ssd = ssd_bench.chunked_impl(ctx, q)
                ssd_bench.check_against_reference(ctx, f"chunked SSD [Q={q}]", ssd(*args), args)
                f, b = ssd_bench.costs("chunked", shape, q)
                timings[q] = ctx.time(f"Q={q} N={dstate}", ssd.fn, ssd.sets([args]), flops=f,
                                      nbytes=b, chunk=q, **shape)
                rows.append(point_row(state_dim=dstate, chunk_size=q, ms=timings[q].median_ms,
                                      p10_ms=timings[q].p10_ms, p90_ms=timings[q].p90_ms))
        best[dstate] = timings
    plot = {"kind": "lines", "x": "chunk_size", "xlabel": "chunk size Q", "ylabel": "time (ms)",
            "group": "state_dim", "y": "ms", "logx": True}
    return Measurement({"state_dims": [n0]}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    claimed = int(mag.low) if mag is not None and mag.kind == "value" else int(cond["chunk_size"])
    if mag is not None and mag.kind == "ratio" and not mag.condition:
        claimed = int(mag.low)
    n0 = m.data["state_dims"][0]
    rows = {r["chunk_size"]: r for r in m.sweep if r["state_dim"] == n0}
    if claimed not in rows:
        return Judgement(stats.Interval(None, None, None), "x", "", "error", "",
                         reason=f"chunk size {claimed} is not in the sweep {sorted(rows)}")

    class _T:
        def __init__(self, r):
            self.median_ms, self.p10_ms, self.p90_ms = r["ms"], r["p10_ms"], r["p90_ms"]

    best_q = min(rows, key=lambda q: rows[q]["ms"])
    r = ratio_interval(_T(rows[claimed]), _T(rows[best_q]))
    return Judgement(
        r, "x", f"t(Q={claimed}) / t(best Q={best_q}), N={n0}",
        stats.decide_below(r, 1.0, margin=TOLERANCE),
        f"Q={claimed} within {TOLERANCE:.0%} of the best chunk size (ratio interval <= "
        f"{1 + TOLERANCE:g}) confirms; clearly slower refutes")
