"""D3: time of the fixed-order (deterministic) reduction over the atomic one. Both are timed as
CUDA-graph replays: at tens of microseconds the host's launch jitter would otherwise be measured;
the graph keeps every launch each reduction makes (zero-fill, partials, final pass)."""

from __future__ import annotations

from typing import Any

from flopkb.verify.context import Context
from flopkb.verify.experiments import _reduction
from flopkb.verify.experiments._common import (
    Judgement,
    Measurement,
    judge_ratio,
    point_row,
    ratio_of,
)
from flopkb.verify.stats import ratio_interval

DEFAULTS: dict[str, Any] = {"elements": 16 * 2**20}


def cpu_check(ctx: Context) -> None:
    ordered = ctx.load("reduction", "ordered")
    x = _reduction.inputs(ctx, 5000)
    _reduction.check_sum(ctx, "reduction.ordered.ordered_sum", ordered.ordered_sum(x, block=512),
                         x, 512)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    atomic = ctx.load("reduction", "atomic")
    ordered = ctx.load("reduction", "ordered")
    cost = ctx.load("reduction", "cost")
    n0 = int(cond["elements"])
    rows = []
    for n in [n0] + ([] if ctx.quick else [q for q in (2**20, 256 * 2**20) if q != n0]):
        if not ctx.more(len(rows)):
            break
        with ctx.optional(len(rows)):
            sets = [(_reduction.inputs(ctx, n, seed=i),) for i in range(ctx.rotations(4 * n))]
            x = sets[0][0]
            _reduction.check_sum(ctx, "reduction.atomic.atomic_sum", atomic.atomic_sum(x), x,
                                 atomic.BLOCK)
            _reduction.check_sum(ctx, "reduction.ordered.ordered_sum", ordered.ordered_sum(x), x,
                                 ordered.BLOCK)
            t_a = ctx.time(f"atomic n={n}", atomic.atomic_sum, sets, flops=cost.flops(n),
                           nbytes=cost.bytes_moved(n), graph=True, n=n)
            t_o = ctx.time(f"ordered n={n}", ordered.ordered_sum, sets, flops=cost.flops(n),
                           nbytes=cost.bytes_moved(n), graph=True, n=n)
            r = ratio_interval(t_o, t_a)
            rows.append(point_row(elements=n, atomic_ms=t_a.median_ms, ordered_ms=t_o.median_ms,
                                  ratio=r.value, ratio_low=r.low, ratio_high=r.high))
    rows.sort(key=lambda r: r["elements"])
    plot = {"kind": "lines", "x": "elements", "xlabel": "elements", "ylabel": "time (ms)",
            "series": {"atomic": "atomic_ms", "fixed order": "ordered_ms"},
            "logx": True, "logy": True}
    primary = next(r for r in rows if r["elements"] == n0)
    return Measurement({"primary": primary}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    p = m.data["primary"]
    return judge_ratio(
        ratio_of(p), mag,
        what=f"t(fixed-order sum) / t(atomic sum), {p['elements']} fp32 elements",
        qualitative="qualitative 'has an overhead': ratio interval above 1.05 confirms, below 1 "
        "refutes",
    )
