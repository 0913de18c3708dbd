"""A1: the same SSD math in the scan schedule (a recurrence over time, no tensor cores) vs the
chunked schedule (matmuls on tensor cores inside chunks). Only the schedule differs: identical
inputs, identical function (both checked against the reference and against each other)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Measurement, point_row, primary_ratio_judge
from flopkb.evidence.stats import ratio_interval
from flopkb.verify.experiments._sweep_points import claim_point_then_sweeps

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# State sizes swept beside the claim's own.
STATE_SWEEP = (16, 128)
LENGTH_SWEEP = (1024, 16384)
# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/scan-vs-matmul-schedule.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}


def cpu_check(ctx: Context) -> None:
    ssd_bench = ctx.load("ssd", "bench")
    k = ssd_bench.kernels()
    import torch

    args = ssd_bench.ssd_inputs(2, 37, 4, 16, 16, groups=2, dtype=torch.float32)
    want = k["reference"].ssd_reference(*args)
    ctx.check("ssd.scan.ssd_scan", k["scan"].ssd_scan(*args), want)
    ctx.check("ssd.chunked.ssd_chunked", k["chunked"].ssd_chunked(*args, chunk_size=16), want)


def _schedules(ctx: Context, chunk: int) -> tuple[Any, Any]:
    """(chunked, scan) schedules of the same SSD math for the "schedules" side: the bundled
    kernels, or fla's chunk_simple_gla and fused_recurrent_simple_gla (each a `bench.Impl` of
    kernels/ssd/bench.py)."""
    ssd_bench = ctx.load("ssd", "bench")
    if ctx.impl("schedules") == "fla":
        from flopkb.verify.peers import fla

        ops, version = fla.ops()
        ctx.describe_impl("schedules",
                          f"peer:{version} chunk_simple_gla vs fused_recurrent_simple_gla")
        impl, gla, inputs = ssd_bench.Impl, ssd_bench.gla_as_ssd, ssd_bench.gla_inputs
        return (impl(gla(ops["chunk_simple_gla"]), version, inputs),
                impl(gla(ops["fused_recurrent_simple_gla"]), version, inputs))
    k = ssd_bench.kernels()
    ctx.describe_impl("schedules", f"bundled ssd_chunked (chunk {chunk}) vs ssd_scan")
    return (ssd_bench.Impl(lambda *a: k["chunked"].ssd_chunked(*a, chunk_size=chunk), "bundled"),
            ssd_bench.Impl(k["scan"].ssd_scan, "bundled"))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    chunk = int(cond["chunk_size"])
    chunked, scan = _schedules(ctx, chunk)
    rows = []
    points = claim_point_then_sweeps(cond, STATE_SWEEP, LENGTH_SWEEP, ctx.quick)
    for (steps, dstate), guarded in ctx.sweep(points, rows):
        with guarded:
            shape = ssd_bench.shape_of(cond, steps, dstate)
            args = ssd_bench.make(ctx, shape)
            y_chunk = chunked(*args)
            y_scan = scan(*args)
            ssd_bench.check_against_reference(ctx, "chunked schedule", y_chunk, args)
            ssd_bench.check_against_reference(ctx, "scan schedule", y_scan, args)
            ctx.check("scan vs chunked schedule (full length)", y_scan, y_chunk.float())
            sets = ssd_bench.arg_sets(ctx, shape, args)
            f_c, b_c = ssd_bench.costs("chunked", shape, chunk)
            f_s, b_s = ssd_bench.costs("scan", shape)
            tag = f"T={steps} N={dstate}"
            t_c = ctx.time(f"chunked {tag}", chunked.fn, chunked.sets(sets), flops=f_c,
                           nbytes=b_c, **shape)
            t_s = ctx.time(f"scan {tag}", scan.fn, scan.sets(sets), flops=f_s, nbytes=b_s,
                           **shape)
            r = ratio_interval(t_s, t_c)
            rows.append(point_row(seq_len=steps, state_dim=dstate, scan_ms=t_s.median_ms,
                                  chunked_ms=t_c.median_ms, ratio=r.value, ratio_low=r.low,
                                  ratio_high=r.high,
                                  scan_tflops=f_s / t_s.median_ms / 1e9,
                                  chunked_tflops=f_c / t_c.median_ms / 1e9))
    plot = {"kind": "lines", "x": "state_dim", "xlabel": "state size N (at the claim's length)",
            "ylabel": "time (ms)", "filter": {"seq_len": rows[0]["seq_len"]},
            "series": {"scan": "scan_ms", "chunked": "chunked_ms"}, "logx": True}
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


judge = primary_ratio_judge(
    lambda p, cond: f"t(scan schedule) / t(chunked schedule), same SSD math, T={p['seq_len']}, "
    f"N={p['state_dim']}")
