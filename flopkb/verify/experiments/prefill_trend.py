"""A6, second half: "the gap is worst at long sequences where prefill dominates". The gap is the
one A6's roofline experiment measures (`roofline.py`): the scan's time over the time its FLOP
count predicts at the GEMM rate measured in this run's calibration (the misprediction factor).
Here it is measured at every sequence length of a sweep at a fixed token count (batch = tokens /
T, so the work stays the same and the last point is a single-sequence prefill), and read as a
trend over T.

Criterion (documented in the declaration): the growth g = misprediction(T_max) /
misprediction(T_min), with the interval [low(T_max) / high(T_min), high(T_max) / low(T_min)]
from the p10/p90 bands. Confirmed when g's interval lies above 1.05 and the factor never falls
significantly between consecutive lengths (each length's high at or above the previous one's
low); refuted when even g's high stays under 1.05 (the factor does not grow from the shortest
to the longest length); inconclusive otherwise (overlapping bands, or a rise with a fall on the
way).
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement, point_row
from flopkb.evidence.stats import CONFIRMED, INCONCLUSIVE, REFUTED, Interval
from flopkb.verify.errors import ExperimentError
from flopkb.verify.experiments import roofline
from flopkb.verify.experiments._cpu_checks import check_layer_scan

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"d_model": 2048, "state_dim": 16, "tokens": 16384, "pass": "forward"}
LENGTHS = (1024, 2048, 4096, 8192, 16384)
QUICK = (1024, 4096, 16384)
GROWTH = 1.05
MIN_POINTS = 3


def cpu_check(ctx: Context) -> None:
    check_layer_scan(ctx)
    roofline.cpu_check(ctx)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    scan_bench = ctx.load("selective_scan", "bench")
    if ctx.ceilings is None:
        raise ExperimentError("needs the calibration's measured ceilings")
    scan = scan_bench.scan_impl(ctx)
    scost = ctx.load("selective_scan", "cost")
    dim, tokens, dstate = 2 * int(cond["d_model"]), int(cond["tokens"]), int(cond["state_dim"])
    gemm_rate = ctx.ceilings.bf16_tflops * 1e12
    rows: list[dict[str, Any]] = []
    lengths = [t for t in (QUICK if ctx.quick else LENGTHS) if t <= tokens]
    for steps, guarded in ctx.sweep(lengths, rows):
        with guarded:
            batch = tokens // steps
            args = scan_bench.layer_inputs(batch, dim, steps, dstate, device=ctx.device,
                                      seed=ctx.seed(steps))
            scan_bench.check(ctx, f"selective scan T={steps}", scan(*args), args)
            flops = scost.flops(batch, dim, steps, dstate, has_bias=True, softplus=True)
            label = f"selective_scan T={steps}"
            t = ctx.time(label, scan.fn, scan_bench.arg_sets(ctx, args, batch, dim, steps, dstate),
                         flops=flops, nbytes=scost.bytes_moved(batch, dim, steps, dstate),
                         batch=batch, dim=dim, steps=steps, dstate=dstate)
            predicted = flops / gemm_rate * 1e3
            rows.append(point_row(
                seq_len=steps, batch=batch, scan_ms=t.median_ms, predicted_ms=predicted,
                misprediction=t.median_ms / predicted, misprediction_low=t.p10_ms / predicted,
                misprediction_high=t.p90_ms / predicted,
                scan_roofline_fraction=ctx.timings[label].get("roofline_fraction")))
    plot = {"kind": "lines", "x": "seq_len", "xlabel": f"sequence length ({tokens} tokens)",
            "ylabel": "scan time / FLOP-count prediction", "logx": True, "logy": False,
            "series": {"misprediction factor": "misprediction"}}
    return Measurement({"lengths": [r["seq_len"] for r in rows]}, rows, dict(cond), plot)


def _band(row: dict[str, Any]) -> Interval:
    return Interval(row["misprediction"], row["misprediction_low"], row["misprediction_high"])


def trend(rows: list[dict[str, Any]]) -> tuple[Interval, str]:
    """(growth interval from the shortest to the longest length, verdict) per the criterion."""
    pts = sorted(rows, key=lambda r: r["seq_len"])
    if len(pts) < MIN_POINTS:
        raise ExperimentError(f"a trend needs at least {MIN_POINTS} lengths; the sweep has "
                              f"{len(pts)}")
    first, last = _band(pts[0]), _band(pts[-1])
    growth = Interval(last.value / first.value, last.low / first.high, last.high / first.low)
    falls = any(_band(b).high < _band(a).low for a, b in pairwise(pts))
    if growth.low > GROWTH and not falls:
        return growth, CONFIRMED
    if growth.high < GROWTH:
        return growth, REFUTED
    return growth, INCONCLUSIVE


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    crit = (f"qualitative 'worst at long sequences': misprediction(T_max) / misprediction(T_min) "
            f"interval above {GROWTH:g} with no significant fall between consecutive lengths "
            f"confirms; its high under {GROWTH:g} refutes")
    if mag is not None and mag.kind != "qualitative":
        return Judgement(Interval(None, None, None), "x", "", "error", crit,
                         reason=f"magnitude {mag.text!r} has no reading in this experiment")
    growth, verdict = trend(m.sweep)
    lengths = sorted(r["seq_len"] for r in m.sweep)
    return Judgement(growth, "x", f"growth of the scan's time / FLOP-count prediction from "
                     f"T={lengths[0]} to T={lengths[-1]} at fixed tokens", verdict, crit)
