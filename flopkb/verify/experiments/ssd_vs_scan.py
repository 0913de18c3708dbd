"""A2: SSD (chunked, tensor cores) vs Mamba-1's fused selective scan at equal state size.

Matched as Mamba-2 and Mamba-1 layers of one width: the scan runs D = H * P channels, each with
an N-dimensional state; SSD runs H heads of head dimension P with the same N (so both carry
D * N state elements per sequence). Same token count, bf16 inputs, fp32 state. The scan is
called as a Mamba-1 layer calls it (raw dt projection, delta_bias, delta_softplus): that call is
what the claim's "fused scan" runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Measurement, point_row, primary_ratio_judge
from flopkb.evidence.stats import ratio_interval
from flopkb.verify.experiments import _training
from flopkb.verify.experiments._cpu_checks import check_layer_scan
from flopkb.verify.experiments._sweep_points import claim_point_then_sweeps

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# State sizes swept beside the claim's own.
STATE_SWEEP = (16, 128)
LENGTH_SWEEP = (1024, 16384)
# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/ssd-vs-scan.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}


def cpu_check(ctx: Context) -> None:
    check_layer_scan(ctx)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    scan_bench = ctx.load("selective_scan", "bench")
    scost = ctx.load("selective_scan", "cost")
    chunk = int(cond["chunk_size"])
    ssd = ssd_bench.chunked_impl(ctx, chunk)
    scan = scan_bench.scan_impl(ctx)
    rows = []
    points = claim_point_then_sweeps(cond, (*STATE_SWEEP, 256), LENGTH_SWEEP, ctx.quick)
    for (steps, dstate), guarded in ctx.sweep(points, rows):
        with guarded:
            shape = ssd_bench.shape_of(cond, steps, dstate)
            dim, batch = shape["heads"] * shape["headdim"], shape["batch"]
            args = ssd_bench.make(ctx, shape)
            ssd_bench.check_against_reference(ctx, "ssd chunked", ssd(*args), args)
            s_args = scan_bench.layer_inputs(batch, dim, steps, dstate, device=ctx.device)
            scan_bench.check(ctx, "selective scan", scan(*s_args), s_args)
            f_c, b_c = ssd_bench.costs("chunked", shape, chunk)
            f_s = scost.flops(batch, dim, steps, dstate)
            b_s = scost.bytes_moved(batch, dim, steps, dstate)
            tag = f"T={steps} N={dstate}"
            t_c = ctx.time(f"ssd {tag}", ssd.fn, ssd.sets(ssd_bench.arg_sets(ctx, shape, args)),
                           flops=f_c, nbytes=b_c, **shape)
            t_s = ctx.time(f"selective_scan {tag}", scan.fn,
                           scan_bench.arg_sets(ctx, s_args, batch, dim, steps, dstate), flops=f_s,
                           nbytes=b_s, batch=batch, dim=dim, steps=steps, dstate=dstate)
            r = ratio_interval(t_s, t_c)
            rows.append(point_row(seq_len=steps, state_dim=dstate, scan_ms=t_s.median_ms,
                                  ssd_ms=t_c.median_ms, ratio=r.value, ratio_low=r.low,
                                  ratio_high=r.high))
    if not ctx.quick:
        rows.append(_training_row(ctx, cond, ssd, scan, rows[0]))
    plot = {"kind": "lines", "x": "state_dim", "xlabel": "state size N",
            "ylabel": "forward time (ms)",
            "filter": {"seq_len": rows[0]["seq_len"], "pass": None},
            "series": {"Mamba-1 selective scan": "scan_ms", "SSD chunked": "ssd_ms"},
            "logx": True}
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


def _training_row(ctx: Context, cond: dict[str, Any], ssd: Any, scan: Any,
                  at: dict[str, Any]) -> dict[str, Any]:
    """The claim's point as a training step (forward+backward): where the ratio moves in
    training. The verdict stays on the paper's forward condition."""
    ssd_bench = ctx.load("ssd", "bench")
    scan_bench = ctx.load("selective_scan", "bench")
    shape = ssd_bench.shape_of(cond, at["seq_len"], at["state_dim"])
    dim, batch = shape["heads"] * shape["headdim"], shape["batch"]
    fb = "forward+backward"
    tag = f"T={at['seq_len']} N={at['state_dim']}"
    t_c = _training.optional_step(ctx, f"ssd {tag} {fb}", ssd.fn,
                                  ssd.prepare(ssd_bench.make(ctx, shape)), fb, **shape)
    t_s = _training.optional_step(
        ctx, f"selective_scan {tag} {fb}", scan.fn,
        scan_bench.layer_inputs(batch, dim, at["seq_len"], at["state_dim"], device=ctx.device), fb,
        batch=batch, dim=dim)
    row = {"seq_len": at["seq_len"], "state_dim": at["state_dim"], "pass": fb}
    if t_c is None or t_s is None:
        return row
    r = ratio_interval(t_s, t_c)
    return point_row(**row, scan_ms=t_s.median_ms, ssd_ms=t_c.median_ms, ratio=r.value,
                     ratio_low=r.low, ratio_high=r.high)


judge = primary_ratio_judge(
    lambda p, cond: f"t(selective scan) / t(SSD chunked), T={p['seq_len']}, N={p['state_dim']}")
