"""C3: the low-rank pair y = (x U) V against the dense y = x W of the same shape, over rank."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement, judge_ratio, point_row
from flopkb.evidence.stats import Interval, ratio_interval
from flopkb.verify.experiments._sweep_points import claim_then

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"tokens": 16384, "size": 4096, "rank_fraction": 0.25}


def cpu_check(ctx: Context) -> None:
    import torch

    lr = ctx.load("gemm", "lowrank")
    ref = ctx.load("gemm", "reference")
    x = torch.randn(21, 40).to(torch.bfloat16)
    U, V = torch.randn(40, 8).to(torch.bfloat16), torch.randn(8, 33).to(torch.bfloat16)
    ctx.check("gemm.lowrank.lowrank_matmul", lr.lowrank_matmul(x, U, V),
              ref.lowrank_reference(x, U, V))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    gemm_bench = ctx.load("gemm", "bench")
    lr = ctx.load("gemm", "lowrank")
    ref = ctx.load("gemm", "reference")
    cost = ctx.load("gemm", "cost")
    m, k = int(cond["tokens"]), int(cond["size"])
    n = k
    r0 = int(k * float(cond["rank_fraction"]))
    x, W = gemm_bench.bf16(ctx, m, k), gemm_bench.bf16(ctx, k, n, seed=1)
    y = lr.dense_matmul(x, W, backend="torch")
    gemm_bench.check_rows(ctx, "gemm.lowrank.dense_matmul[torch]", y, x, W)
    t_d = ctx.time("dense", lambda a, b: lr.dense_matmul(a, b, backend="torch"), [(x, W)],
                   flops=cost.flops(m, n, k), nbytes=cost.bytes_moved(m, n, k), m=m, n=n, k=k)
    rows = []
    ranks = claim_then(r0, (k // 16, k // 8, k // 2), ctx.quick)
    for r, guarded in ctx.sweep(ranks, rows):
        with guarded:
            U = gemm_bench.bf16(ctx, k, r, seed=2) / k**0.5
            V = gemm_bench.bf16(ctx, r, n, seed=3)
            out = lr.lowrank_matmul(x, U, V, backend="torch")
            rows_n = min(gemm_bench.CHECK_ROWS, m)
            ctx.check(f"gemm.lowrank.lowrank_matmul[torch] r={r}", out[:rows_n],
                      ref.lowrank_reference(x[:rows_n], U, V))
            t_l = ctx.time(f"lowrank r={r}",
                           lambda a, u, v: lr.lowrank_matmul(a, u, v, backend="torch"),
                           [(x, U, V)], flops=cost.lowrank_flops(m, k, n, r),
                           nbytes=cost.lowrank_bytes_moved(m, k, n, r), m=m, k=k, n=n, r=r)
            s = ratio_interval(t_d, t_l)
            flop_ratio = cost.flops(m, n, k) / cost.lowrank_flops(m, k, n, r)
            rows.append(point_row(rank=r, dense_ms=t_d.median_ms, lowrank_ms=t_l.median_ms,
                                  speedup=s.value, speedup_low=s.low, speedup_high=s.high,
                                  flop_ratio=flop_ratio, efficiency=s.value / flop_ratio))
    rows.sort(key=lambda row: row["rank"])
    plot = {"kind": "lines", "x": "rank", "xlabel": "rank r", "ylabel": "speedup over dense",
            "series": {"measured speedup": "speedup", "FLOP ratio": "flop_ratio"},
            "logx": True, "logy": True, "hline": 1.0}
    primary = next(row for row in rows if row["rank"] == r0)
    return Measurement({"primary": primary}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Experiment) -> Judgement:
    p = m.data["primary"]
    return judge_ratio(
        Interval(p["speedup"], p["speedup_low"], p["speedup_high"]), mag,
        what=f"t(dense) / t(low rank), r={p['rank']} (FLOP ratio {p['flop_ratio']:.2f}, "
        f"efficiency {p['efficiency']:.2f}), cuBLAS",
        qualitative=declaration.qualitative_criterion,
    )
