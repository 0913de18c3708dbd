"""C2: bf16 GEMM throughput over nearby square shapes. Within a few percent of one size the
roofline predicts the same throughput (every shape here is compute-bound, far above the ridge
point), so any swing between neighbours is what the roofline misses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row
from flopkb.evidence.stats import Interval

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"size": 4096}
FULL_OFFSETS = (-64, -33, -8, -1, 0, 1, 8, 31, 64)
QUICK_OFFSETS = (-1, 0, 1, 64)
THRESHOLD = 1.25


def cpu_check(ctx: Context) -> None:
    import torch

    tg = ctx.load("gemm", "triton_gemm")
    ref = ctx.load("gemm", "reference")
    a, b = torch.randn(37, 45).to(torch.bfloat16), torch.randn(45, 19).to(torch.bfloat16)
    ctx.check("gemm.triton_gemm.matmul", tg.matmul(a, b), ref.matmul_reference(a, b))


def _swing(rows: list[dict[str, Any]], key: str) -> Interval:
    """max/min TFLOP/s over shapes, band from the p10/p90 times of the extremes."""
    hi = max(rows, key=lambda r: r[f"{key}_tflops"])
    lo = min(rows, key=lambda r: r[f"{key}_tflops"])
    return Interval(hi[f"{key}_tflops"] / lo[f"{key}_tflops"],
                    (hi["flops"] / hi[f"{key}_p90"]) / (lo["flops"] / lo[f"{key}_p10"]),
                    (hi["flops"] / hi[f"{key}_p10"]) / (lo["flops"] / lo[f"{key}_p90"]))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    gemm_bench = ctx.load("gemm", "bench")
    cublas = ctx.load("gemm", "cublas")
    tg = ctx.load("gemm", "triton_gemm")
    base = int(cond["size"])
    rows = []
    for off, guarded in ctx.sweep(QUICK_OFFSETS if ctx.quick else FULL_OFFSETS, rows):
        with guarded:
            s = base + off
            t_c = gemm_bench.timed_matmul(ctx, f"cublas {s}", cublas.torch_matmul, s, s, s)
            t_t = gemm_bench.timed_matmul(ctx, f"triton {s}", tg.matmul, s, s, s)
            f = 2 * s**3
            rows.append(point_row(size=s, flops=f, cublas_tflops=f / t_c.median_ms / 1e9,
                                  cublas_p10=t_c.p10_ms, cublas_p90=t_c.p90_ms,
                                  triton_tflops=f / t_t.median_ms / 1e9, triton_p10=t_t.p10_ms,
                                  triton_p90=t_t.p90_ms))
    swing_c, swing_t = _swing(rows, "cublas"), _swing(rows, "triton")
    # Compute-bound everywhere: the roofline's predicted throughput is the same peak for each
    # shape, so its predicted swing is 1 (bytes are 3 s^2 x 2, intensity s/3 FLOP/byte >> ridge).
    data = {
        "swing_cublas": swing_c.as_dict(), "swing_triton": swing_t.as_dict(),
        "cv_cublas": stats.coefficient_of_variation([r["cublas_tflops"] for r in rows]),
        "cv_triton": stats.coefficient_of_variation([r["triton_tflops"] for r in rows]),
        "roofline_swing": 1.0,
    }
    plot = {"kind": "lines", "x": "size", "xlabel": "M = N = K", "ylabel": "TFLOP/s",
            "series": {"cuBLAS": "cublas_tflops", "Triton": "triton_tflops"}, "markers": True}
    return Measurement(data, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    s = m.data["swing_cublas"]
    measured = Interval.from_dict(s)
    return Judgement(
        measured, "x",
        f"max/min cuBLAS TFLOP/s over square shapes {cond['size']}±64 (roofline predicts 1.0; "
        f"CV {m.data['cv_cublas']:.3f}; Triton swing {m.data['swing_triton']['value']:.2f})",
        stats.decide_above(measured, THRESHOLD, margin=0.0),
        f"qualitative 'rugged': swing interval above {THRESHOLD} confirms, wholly below refutes")
