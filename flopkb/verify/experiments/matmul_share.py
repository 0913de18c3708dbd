"""B1: share of the chunked SSD forward's time spent in its matmul (tensor-core) stages, timed
stage by stage through `ssd_chunked_stages` (chunk_state and chunk_scan are matmul stages;
state_passing is the short recurrence across chunks). Forward only: the claim speaks of training
FLOPs; the analytic FLOP share of the matmul terms is reported beside the time share."""

from __future__ import annotations

from typing import Any

from flopkb.verify import stats
from flopkb.verify.context import Context
from flopkb.verify.experiments import _ssd
from flopkb.verify.experiments._common import Judgement, Measurement, point_row, size_of
from flopkb.verify.stats import Interval

DEFAULTS: dict[str, Any] = {"state_dim": 128, "head_dim": 64, "heads": 32, "tokens": 32768,
                            "seq_len": 4096, "chunk_size": 64, "pass": "forward"}
THRESHOLD = 0.5


def cpu_check(ctx: Context) -> None:
    import torch

    from flopkb.verify.experiments._common import ssd_inputs

    k = _ssd.kernels(ctx)
    args = ssd_inputs(1, 40, 2, 16, 16, dtype=torch.float32)
    run = k["chunked"].ssd_chunked_stages(*args, chunk_size=16)
    ctx.check("ssd.chunked.ssd_chunked_stages", run(), k["reference"].ssd_reference(*args))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    k = _ssd.kernels(ctx)
    chunk = int(cond["chunk_size"])
    steps, n0 = size_of(cond["seq_len"]), int(cond["state_dim"])
    matmul_stages = set(getattr(k["chunked"], "MATMUL_STAGES", ("chunk_state", "chunk_scan")))
    rows = []
    for dstate in [n0] + ([] if ctx.quick else [n for n in (64, 256) if n != n0]):
        if not ctx.more(len(rows)):
            break
        with ctx.optional(len(rows)):
            shape = _ssd.shape_of(cond, steps, dstate)
            args = _ssd.make(ctx, shape)
            run = k["chunked"].ssd_chunked_stages(*args, chunk_size=chunk)
            _ssd.check_against_reference(ctx, "ssd.chunked.ssd_chunked_stages", run(), args)
            times = {name: ctx.time(f"{name} N={dstate}", fn, [()], **shape)
                     for name, fn in run.stages.items()}
            mm = [t for n, t in times.items() if n in matmul_stages]
            other = [t for n, t in times.items() if n not in matmul_stages]
            mm_i, other_i = stats.sum_interval(mm), stats.sum_interval(other) if other else None
            o_val = other_i.value if other_i else 0.0
            o_lo = other_i.low if other_i else 0.0
            o_hi = other_i.high if other_i else 0.0
            share = Interval(mm_i.value / (mm_i.value + o_val), mm_i.low / (mm_i.low + o_hi),
                             mm_i.high / (mm_i.high + o_lo))
            f_total = _ssd.costs(ctx, "chunked", shape, chunk)[0]
            f_pass = (shape["batch"] * shape["heads"] * 2 * (steps // chunk)
                      * shape["headdim"] * dstate)
            rows.append(point_row(state_dim=dstate, seq_len=steps, share=share.value,
                                  share_low=share.low, share_high=share.high,
                                  flop_share=1 - f_pass / f_total,
                                  **{f"{n}_ms": t.median_ms for n, t in times.items()}))
    plot = {"kind": "stacked", "x": "state_dim", "xlabel": "state size N", "ylabel": "time (ms)",
            "series": {n: f"{n}_ms" for n in ("chunk_state", "state_passing", "chunk_scan")}}
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    p = m.data["primary"]
    measured = Interval(p["share"], p["share_low"], p["share_high"])
    return Judgement(measured, "fraction",
                     f"share of chunked-SSD forward time in matmul stages, N={p['state_dim']}, "
                     f"T={p['seq_len']}", stats.decide_above(measured, THRESHOLD, margin=0.0),
                     "qualitative 'dominated by matmuls': time-share interval above 0.5 confirms, "
                     "below 0.5 refutes")
