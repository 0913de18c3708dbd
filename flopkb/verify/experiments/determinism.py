"""D1: repeat an atomic float reduction and a fixed-order one on the same input and count the
distinct bitwise results: determinism is a property of the reduction's configuration."""

from __future__ import annotations

from typing import Any

from flopkb.verify.context import Context
from flopkb.verify.experiments import _reduction
from flopkb.verify.experiments._common import Judgement, Measurement, point_row
from flopkb.verify.stats import Interval

DEFAULTS: dict[str, Any] = {"elements": 16 * 2**20, "repeats": 100}


def cpu_check(ctx: Context) -> None:
    atomic = ctx.load("reduction", "atomic")
    ordered = ctx.load("reduction", "ordered")
    x = _reduction.inputs(ctx, 20000)
    _reduction.check_sum(ctx, "reduction.atomic.atomic_sum", atomic.atomic_sum(x, block=1024), x,
                         1024)
    _reduction.check_sum(ctx, "reduction.ordered.ordered_sum", ordered.ordered_sum(x, block=1024),
                         x, 1024)


def distinct(fn: Any, x: Any, repeats: int) -> int:
    import torch

    outs = torch.stack([fn(x) for _ in range(repeats)])
    return int(torch.unique(outs.view(torch.int32)).numel())


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    atomic = ctx.load("reduction", "atomic")
    ordered = ctx.load("reduction", "ordered")
    n0, repeats = int(cond["elements"]), int(cond["repeats"])
    if ctx.quick:
        repeats = min(repeats, 40)
    rows = []
    for n in [n0] + ([] if ctx.quick else [q for q in (2**20, 64 * 2**20) if q != n0]):
        if not ctx.more(len(rows)):
            break
        with ctx.optional(len(rows)):
            x = _reduction.inputs(ctx, n)
            _reduction.check_sum(ctx, "reduction.atomic.atomic_sum", atomic.atomic_sum(x), x,
                                 atomic.BLOCK)
            _reduction.check_sum(ctx, "reduction.ordered.ordered_sum", ordered.ordered_sum(x), x,
                                 ordered.BLOCK)
            rows.append(point_row(elements=n, repeats=repeats,
                                  atomic_distinct=distinct(atomic.atomic_sum, x, repeats),
                                  ordered_distinct=distinct(ordered.ordered_sum, x, repeats)))
    rows.sort(key=lambda r: r["elements"])
    plot = {"kind": "bars", "x": "elements", "xlabel": "elements", "ylabel": "distinct results",
            "series": {"atomic": "atomic_distinct", "fixed order": "ordered_distinct"}}
    primary = next(r for r in rows if r["elements"] == n0)
    return Measurement({"primary": primary}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    p = m.data["primary"]
    a, o = p["atomic_distinct"], p["ordered_distinct"]
    if o > 1:
        verdict = "refuted"
    elif a > 1:
        verdict = "confirmed"
    else:
        verdict = "inconclusive"
    return Judgement(
        Interval(float(a), float(a), float(a)), "distinct results",
        f"distinct bitwise sums over {p['repeats']} runs at {p['elements']} elements: atomic "
        f"{a}, fixed order {o}", verdict,
        "atomic > 1 distinct and fixed order exactly 1 confirms; fixed order > 1 refutes; "
        "both 1 is inconclusive")
