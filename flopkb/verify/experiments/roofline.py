"""A6: how far a FLOP count predicts an SSM scan's time. The selective scan's FLOPs divided by the
GEMM rate measured in this run's calibration give the time a FLOP count "predicts"; the measured
time over that prediction is the misprediction factor. Alongside: the fraction of roofline
(floor / time) of the scan, of a memory-bound elementwise kernel (axpby) and of a bf16 GEMM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row
from flopkb.evidence.stats import Interval
from flopkb.verify.errors import ExperimentError

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"d_model": 2048, "state_dim": 16, "tokens": 16384, "pass": "forward"}
THRESHOLD = 2.0
# The reference length of the claim point, the elementwise size (768 MB moved: far past L2) and
# the GEMM shown beside them.
REFERENCE_T = 4096
ELEMENTWISE_N = 64 * 2**20
GEMM_N = 4096


def cpu_check(ctx: Context) -> None:
    import torch

    ew = ctx.load("elementwise", "forward")
    ref = ctx.load("elementwise", "reference")
    x, y = torch.randn(1000), torch.randn(1000)
    ctx.check("elementwise.forward.axpby", ew.axpby(x, y, 2.0, -0.5),
              ref.axpby_reference(x, y, 2.0, -0.5))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    import torch

    scan_bench = ctx.load("selective_scan", "bench")
    gemm_bench = ctx.load("gemm", "bench")
    if ctx.ceilings is None:
        raise ExperimentError("needs the calibration's measured ceilings")
    scan = scan_bench.scan_impl(ctx)
    scost = ctx.load("selective_scan", "cost")
    ew = ctx.load("elementwise", "forward")
    eref = ctx.load("elementwise", "reference")
    ecost = ctx.load("elementwise", "cost")
    cublas = ctx.load("gemm", "cublas")
    dim, tokens = 2 * int(cond["d_model"]), int(cond["tokens"])
    gemm_rate = ctx.ceilings.bf16_tflops * 1e12
    rows = []
    n0 = int(cond["state_dim"])
    pts = [(REFERENCE_T, n0)]
    if not ctx.quick:
        pts += [(1024, n0), (16384, n0), (REFERENCE_T, 64 if n0 != 64 else 16)]
    for (steps, dstate), guarded in ctx.sweep(pts, rows):
        with guarded:
            batch = max(1, tokens // steps)
            args = scan_bench.layer_inputs(batch, dim, steps, dstate, device=ctx.device)
            scan_bench.check(ctx, "selective scan", scan(*args), args)
            flops = scost.flops(batch, dim, steps, dstate)
            t = ctx.time(f"selective_scan T={steps} N={dstate}", scan.fn, [args],
                         flops=flops, nbytes=scost.bytes_moved(batch, dim, steps, dstate),
                         batch=batch, dim=dim, steps=steps, dstate=dstate)
            predicted_ms = flops / gemm_rate * 1e3
            entry = ctx.timings[f"selective_scan T={steps} N={dstate}"]
            rows.append(point_row(
                seq_len=steps, state_dim=dstate, scan_ms=t.median_ms, predicted_ms=predicted_ms,
                misprediction=t.median_ms / predicted_ms, misprediction_low=t.p10_ms / predicted_ms,
                misprediction_high=t.p90_ms / predicted_ms,
                scan_roofline_fraction=entry.get("roofline_fraction"),
                scan_tflops=entry.get("tflops")))
    n = ELEMENTWISE_N
    x = torch.randn(n, device=ctx.device)
    yv = torch.randn(n, device=ctx.device)
    ctx.check("elementwise.forward.axpby", ew.axpby(x, yv, 2.0, -0.5),
              eref.axpby_reference(x, yv, 2.0, -0.5))
    ctx.time("axpby", lambda a, b: ew.axpby(a, b, 2.0, -0.5), [(x, yv)], flops=ecost.flops(n),
             nbytes=ecost.bytes_moved(n), n=n)
    gemm_bench.timed_matmul(ctx, "gemm", cublas.torch_matmul, GEMM_N, GEMM_N, GEMM_N)
    fractions = {
        "selective_scan": rows[0].get("scan_roofline_fraction"),
        "elementwise_axpby": ctx.timings["axpby"].get("roofline_fraction"),
        "gemm_bf16": ctx.timings["gemm"].get("roofline_fraction"),
    }
    flop_eff = {
        "selective_scan": rows[0].get("scan_tflops", 0) / ctx.ceilings.bf16_tflops,
        "elementwise_axpby": ctx.timings["axpby"].get("tflops", 0) / ctx.ceilings.bf16_tflops,
        "gemm_bf16": ctx.timings["gemm"].get("tflops", 0) / ctx.ceilings.bf16_tflops,
    }
    plot = {"kind": "category", "xlabel": "kernel", "ylabel": "fraction",
            "categories": {"fraction of roofline": fractions,
                           "FLOP/s / bf16 peak": flop_eff}, "logy": True}
    return Measurement({"primary": rows[0], "roofline_fraction": fractions,
                        "flop_efficiency": flop_eff}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    p = m.data["primary"]
    measured = Interval(p["misprediction"], p["misprediction_low"], p["misprediction_high"])
    crit = (f"qualitative 'FLOPs predict time poorly': scan time / (FLOPs at the measured GEMM "
            f"rate) above {THRESHOLD:g} x 1.05 confirms, below {THRESHOLD:g} refutes")
    if mag is not None and mag.kind not in {"qualitative"}:
        return Judgement(measured, "x", "", "error", crit,
                         reason=f"magnitude {mag.text!r} has no reading in this experiment")
    return Judgement(measured, "x",
                     f"scan time / FLOP-count prediction at GEMM rate, T={p['seq_len']}, "
                     f"N={p['state_dim']}", stats.decide_above(measured, THRESHOLD), crit)
