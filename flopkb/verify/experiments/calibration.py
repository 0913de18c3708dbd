"""Measured ceilings: dense bf16 GEMM rate (cuBLAS, random data) and device copy bandwidth.

Every roofline floor of the run comes from these two numbers, measured in the same process on the
same GPU (datasheet figures are leads only: an H200 reaches about 790 of its 989 TFLOP/s here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement
from flopkb.evidence.stats import Interval
from flopkb.verify.errors import ExperimentError

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"gemm_size": 8192, "copy_bytes": 2 * 2**30}


def cpu_check(ctx: Context) -> None:
    import torch

    cublas = ctx.load("gemm", "cublas")
    ref = ctx.load("gemm", "reference")
    a = torch.randn(33, 47).to(torch.bfloat16)
    b = torch.randn(47, 29).to(torch.bfloat16)
    ctx.check("gemm.cublas.torch_matmul", cublas.torch_matmul(a, b), ref.matmul_reference(a, b))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    import torch

    from flopkb.verify.timing import time_cuda

    cublas = ctx.load("gemm", "cublas")
    ref = ctx.load("gemm", "reference")
    n = int(cond["gemm_size"])
    g = torch.Generator(device=ctx.device).manual_seed(0)
    a = torch.randn(n, n, device=ctx.device, generator=g, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=ctx.device, generator=g, dtype=torch.bfloat16)
    ctx.check("gemm.cublas.torch_matmul", cublas.torch_matmul(a[:512], b),
              ref.matmul_reference(a[:512], b))
    s = ctx.settings
    # Ten warm-up products first: the clocks ramp up from idle (345 MHz seen at rest).
    gemm = time_cuda(cublas.torch_matmul, [(a, b)], warmup=10, reps=s.reps,
                     budget_ms=s.budget_ms)
    tflops = 2 * n**3 / (gemm.median_ms / 1e3) / 1e12
    del a, b
    elems = int(cond["copy_bytes"]) // 4
    src = torch.randn(elems, device=ctx.device, generator=g)
    dst = torch.empty_like(src)
    dst.copy_(src)
    if not torch.equal(dst, src):
        raise ExperimentError("device copy produced different bytes")
    copy = time_cuda(dst.copy_, [(src,)], warmup=s.warmup, reps=s.reps, budget_ms=s.budget_ms)
    gbps = 2 * src.numel() * 4 / (copy.median_ms / 1e3) / 1e9
    ctx.timings["gemm"] = {"m": n, "n": n, "k": n, **gemm.as_dict(), "tflops": tflops}
    ctx.timings["copy"] = {"bytes_read_plus_written": 2 * src.numel() * 4, **copy.as_dict(),
                           "gbps": gbps}
    data = {
        "bf16_tflops": tflops,
        "bf16_tflops_low": 2 * n**3 / (gemm.p90_ms / 1e3) / 1e12,
        "bf16_tflops_high": 2 * n**3 / (gemm.p10_ms / 1e3) / 1e12,
        "copy_gbps": gbps,
        "copy_gbps_high": 2 * src.numel() * 4 / (copy.p10_ms / 1e3) / 1e9,
    }
    return Measurement(data, conditions=dict(cond))


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    d = m.data
    return Judgement(Interval(d["bf16_tflops"], d["bf16_tflops_low"], d["bf16_tflops_high"]),
                     "TFLOP/s", f"bf16 GEMM peak (cuBLAS); copy {d['copy_gbps']:.0f} GB/s",
                     "confirmed", "calibration: ceilings measured, nothing claimed")
