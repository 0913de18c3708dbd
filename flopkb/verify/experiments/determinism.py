"""D1: repeat a float sum on the same input and count the distinct bitwise results, per level.

Side "reduction": `cub` runs CUB's own `DeviceReduce::Sum` at CCCL's three levels
(not_guaranteed, run_to_run, gpu_to_gpu); `bundled` runs our atomic-add sum against our
fixed-order one (the same distinction between an unordered and a fixed combining order).
Every run adds a scatter-add pair (`index_add_` into few bins, without and with
torch.use_deterministic_algorithms): distinct results and time of each, since what determinism
costs depends on the operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement, point_row
from flopkb.evidence.stats import Interval, ratio_interval
from flopkb.verify.experiments._sweep_points import claim_then

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"elements": 16 * 2**20, "repeats": 100}
SWEEP = (2**20, 64 * 2**20)
# the scatter-add pair every run adds (kernels/reduction/scatter.py): size, bins, repeats
SCATTER: dict[str, int] = {"elements": 16 * 2**20, "bins": 4096, "repeats": 20}


def cpu_check(ctx: Context) -> None:
    red_bench = ctx.load("reduction", "bench")
    atomic = ctx.load("reduction", "atomic")
    ordered = ctx.load("reduction", "ordered")
    x = red_bench.inputs(ctx, 20000)
    red_bench.check_sum(ctx, "reduction.atomic.atomic_sum", atomic.atomic_sum(x, block=1024), x,
                         1024)
    red_bench.check_sum(ctx, "reduction.ordered.ordered_sum", ordered.ordered_sum(x, block=1024),
                         x, 1024)
    scatter = ctx.load("reduction", "scatter")
    src, index = red_bench.scatter_inputs(ctx, 5000, 64)
    want = ctx.load("reduction", "reference").scatter_add_reference(src, index, 64)
    for det in (False, True):
        ctx.check(f"torch index_add_ (deterministic={det})",
                  scatter.scatter_add(src, index, 64, det), want.float())
    red_bench.check_cub_plan(ctx)


def _cub_row(ctx: Context, lib: Any, x: Any, repeats: int) -> dict[str, Any]:
    red_bench = ctx.load("reduction", "bench")
    counts, first = {}, {}
    for level in red_bench.LEVELS:
        out = lib.sum(x, level)
        red_bench.check_sum(ctx, f"cub DeviceReduce::Sum ({level})", out, x, red_bench.CUB_TILE)
        first[level] = red_bench.bits_hex(out)
        counts[level] = red_bench.distinct([lib.sum(x, level) for _ in range(repeats)])
    return point_row(row="sum", elements=x.numel(), repeats=repeats,
                     not_guaranteed_distinct=counts["not_guaranteed"],
                     run_to_run_distinct=counts["run_to_run"],
                     gpu_to_gpu_distinct=counts["gpu_to_gpu"],
                     # bit patterns of one run per level: different algorithms round differently
                     levels_distinct=len(set(first.values())), **{f"{k}_bits": v
                                                                  for k, v in first.items()})


def _bundled_row(ctx: Context, x: Any, repeats: int) -> dict[str, Any]:
    red_bench = ctx.load("reduction", "bench")
    atomic = ctx.load("reduction", "atomic")
    ordered = ctx.load("reduction", "ordered")
    red_bench.check_sum(ctx, "reduction.atomic.atomic_sum", atomic.atomic_sum(x), x,
                         atomic.BLOCK)
    red_bench.check_sum(ctx, "reduction.ordered.ordered_sum", ordered.ordered_sum(x), x,
                         ordered.BLOCK)
    return point_row(
        row="sum", elements=x.numel(), repeats=repeats,
        atomic_distinct=red_bench.distinct([atomic.atomic_sum(x) for _ in range(repeats)]),
        ordered_distinct=red_bench.distinct([ordered.ordered_sum(x) for _ in range(repeats)]))


def scatter_rows(ctx: Context, n: int, bins: int, repeats: int) -> list[dict[str, Any]]:
    """Distinct results over `repeats` runs and the graph-replay time of the scatter-add in both
    torch modes, each checked first against the float64 scatter; one row with their ratio."""
    red_bench = ctx.load("reduction", "bench")
    scatter = ctx.load("reduction", "scatter")
    cost = ctx.load("reduction", "cost")
    sets = red_bench.scatter_sets(ctx, n, bins)
    src, index = sets[0]
    want = ctx.load("reduction", "reference").scatter_add_reference(src, index, bins)
    timings, counts = {}, {}
    for mode, det in (("nondeterministic", False), ("deterministic", True)):
        ctx.check(f"torch index_add_ ({mode})", scatter.scatter_add(src, index, bins, det),
                  want.float())
        counts[mode] = red_bench.distinct([scatter.scatter_add(src, index, bins, det)
                                           for _ in range(repeats)])
        timings[mode] = ctx.time(f"index_add_ {mode} n={n}",
                                 lambda s, i, det=det: scatter.scatter_add(s, i, bins, det), sets,
                                 nbytes=cost.scatter_bytes(n, bins), graph=True, n=n, bins=bins)
    r = ratio_interval(timings["deterministic"], timings["nondeterministic"])
    return [{"row": "scatter", "op": "index_add_", "elements": n, "bins": bins,
             "repeats": repeats, "nondeterministic_distinct": counts["nondeterministic"],
             "deterministic_distinct": counts["deterministic"],
             "nondeterministic_ms": timings["nondeterministic"].median_ms,
             "deterministic_ms": timings["deterministic"].median_ms,
             "ratio": r.value, "ratio_low": r.low, "ratio_high": r.high}]


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    red_bench = ctx.load("reduction", "bench")
    impl = ctx.impl("reduction")
    n0, repeats = int(cond["elements"]), int(cond["repeats"])
    if ctx.quick:
        repeats = min(repeats, 40)
    if impl == "cub":
        lib = red_bench.cub_levels(ctx)
        point = lambda x: _cub_row(ctx, lib, x, repeats)  # noqa: E731
    elif impl == "bundled":
        ctx.describe_impl("reduction", "bundled atomic_sum (tl.atomic_add of block partials) vs "
                          "ordered_sum (partials folded in index order)")
        point = lambda x: _bundled_row(ctx, x, repeats)  # noqa: E731
    else:
        raise ValueError(f"no {impl!r} implementation of the reduction side")
    rows: list[dict[str, Any]] = []
    for n, guarded in ctx.sweep(claim_then(n0, SWEEP, ctx.quick), rows):
        with guarded:
            rows.append(point(red_bench.inputs(ctx, n)))
    scatter = dict(SCATTER)
    if ctx.quick:
        scatter["repeats"] = min(scatter["repeats"], 10)
    if ctx.more(len(rows)):
        with ctx.optional(len(rows)):
            rows.extend(scatter_rows(ctx, min(scatter["elements"], n0), scatter["bins"],
                                      scatter["repeats"]))
    sums = sorted((r for r in rows if r["row"] == "sum"), key=lambda r: r["elements"])
    rows = sums + [r for r in rows if r["row"] != "sum"]
    series = ({level: f"{level}_distinct" for level in red_bench.LEVELS} if impl == "cub"
              else {"atomic": "atomic_distinct", "fixed order": "ordered_distinct"})
    plot = {"kind": "bars", "x": "elements", "xlabel": "elements", "ylabel": "distinct results",
            "series": series, "filter": {"row": "sum"}}
    primary = next(r for r in sums if r["elements"] == n0)
    return Measurement({"impl": impl, "primary": primary}, rows, dict(cond), plot)


CUB_CRITERION = (
    "CUB's levels: confirmed when run_to_run and gpu_to_gpu each give exactly 1 bitwise result "
    "over the repeats and the levels are told apart (their bit patterns are not all equal, or "
    "not_guaranteed varies); refuted when run_to_run or gpu_to_gpu gives more than 1; "
    "inconclusive when the three levels cannot be told apart. not_guaranteed's count is "
    "reported, not required above 1: atomics permit variation, a given GPU and size need not "
    "show it"
)

BUNDLED_CRITERION = ("atomic > 1 distinct and fixed order exactly 1 confirms; fixed order > 1 "
                     "refutes; both 1 is inconclusive")


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    p = m.data["primary"]
    if m.data.get("impl") == "cub":
        ng, rr, g2g = (p["not_guaranteed_distinct"], p["run_to_run_distinct"],
                       p["gpu_to_gpu_distinct"])
        if rr > 1 or g2g > 1:
            verdict = "refuted"
        elif ng > 1 or p["levels_distinct"] > 1:
            verdict = "confirmed"
        else:
            verdict = "inconclusive"
        worst = float(max(rr, g2g))
        return Judgement(
            Interval(worst, worst, worst), "distinct results",
            f"distinct bitwise sums over {p['repeats']} runs at {p['elements']} fp32 elements, "
            f"CUB DeviceReduce::Sum: not_guaranteed {ng}, run_to_run {rr}, gpu_to_gpu {g2g}; "
            f"{p['levels_distinct']} distinct bit patterns across the three levels",
            verdict, CUB_CRITERION)
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
        f"{a}, fixed order {o}", verdict, BUNDLED_CRITERION)
