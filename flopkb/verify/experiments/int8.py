"""C4 (INT8 part): native INT8 tensor-core GEMM vs INT8 emulated on the bf16 tensor cores.

The primary pair is the same Triton tile loop twice, differing only in the MMA it issues (int8
`tl.dot` with int32 accumulation vs int8 tiles converted to bf16 before the dot), so the ratio is
the price of emulation alone; `torch._int_mm` (cuBLASLt IMMA) is reported beside it. Integer
inputs in [-16, 16] keep every partial sum exact in fp32, so all three must agree bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Measurement, point_row, primary_ratio_judge
from flopkb.evidence.stats import ratio_interval
from flopkb.verify.experiments._sweep_points import claim_then

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"size": 8192}
CHECK_ROWS = 128


def _ints(ctx: Context, *shape: int, seed: int) -> Any:
    import torch

    g = torch.Generator(device=ctx.device).manual_seed(seed)
    return torch.randint(-16, 17, shape, generator=g, device=ctx.device, dtype=torch.int8)


def cpu_check(ctx: Context) -> None:
    mod = ctx.load("gemm", "int8")
    ref = ctx.load("gemm", "reference")
    a, w = _ints(ctx, 37, 48, seed=0), _ints(ctx, 40, 48, seed=1)
    b = w.t()
    want = ref.int8_matmul_reference(a, b)
    ctx.check("gemm.int8.int8_matmul_triton", mod.int8_matmul_triton(a, b), want, exact=True)
    ctx.check("gemm.int8.int8_matmul_emulated", mod.int8_matmul_emulated(a, b), want, exact=True)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    mod = ctx.load("gemm", "int8")
    ref = ctx.load("gemm", "reference")
    cost = ctx.load("gemm", "cost")
    s0 = int(cond["size"])
    rows = []
    for s, guarded in ctx.sweep(claim_then(s0, (2048, 4096), ctx.quick), rows):
        with guarded:
            a, w = _ints(ctx, s, s, seed=0), _ints(ctx, s, s, seed=1)
            b = w.t()
            want = ref.int8_matmul_reference(a[:CHECK_ROWS], b)
            outs = {"native (Triton int8 dot)": mod.int8_matmul_triton,
                    "emulated (bf16 dot)": mod.int8_matmul_emulated,
                    "native (torch._int_mm)": mod.int8_matmul_torch}
            flops, moved = cost.flops(s, s, s), cost.bytes_moved(s, s, s, in_bytes=1, out_bytes=4)
            per_set = 2 * s * s
            sets = [(a, b)] + [(_ints(ctx, s, s, seed=2 * i), _ints(ctx, s, s, seed=2 * i + 1).t())
                               for i in range(1, ctx.rotations(per_set))]
            t = {}
            for label, fn in outs.items():
                try:
                    got = fn(a[:CHECK_ROWS], b) if "torch" not in label else fn(a, b)[:CHECK_ROWS]
                except (RuntimeError, ValueError) as exc:
                    if "torch" not in label:
                        raise
                    # cuBLASLt is reported beside the primary pair only; its refusal is noted.
                    ctx.notes.append(f"torch._int_mm refused s={s}: {str(exc).splitlines()[0]}")
                    continue
                ctx.check(f"gemm.int8 {label} s={s}", got, want, exact=True)
                t[label] = ctx.time(f"{label} s={s}", fn, sets, flops=flops, nbytes=moved,
                                    rate_scale=2.0, m=s, n=s, k=s)
            r = ratio_interval(t["emulated (bf16 dot)"], t["native (Triton int8 dot)"])
            native_lt = t.get("native (torch._int_mm)")
            r_t = ratio_interval(t["emulated (bf16 dot)"], native_lt) if native_lt else None
            tops = {f"{k.split(' ')[0]}_{'torch' if 'torch' in k else 'triton'}_tops":
                    flops / v.median_ms / 1e9 for k, v in t.items()}
            rows.append(point_row(size=s, ratio=r.value, ratio_low=r.low, ratio_high=r.high,
                                  ratio_vs_cublaslt=r_t.value if r_t else None, **tops))
    rows.sort(key=lambda row: row["size"])
    plot = {"kind": "bars", "x": "size", "xlabel": "M = N = K", "ylabel": "TOPS",
            "series": {"native Triton": "native_triton_tops", "emulated": "emulated_triton_tops",
                       "native cuBLASLt": "native_torch_tops"}}
    primary = next(row for row in rows if row["size"] == s0)
    return Measurement({"primary": primary}, rows, dict(cond), plot)


judge = primary_ratio_judge(
    lambda p, cond: f"t(INT8 emulated on bf16 MMA) / t(native INT8 MMA), same Triton kernel, "
    f"{p['size']}^3 (vs cuBLASLt: {p.get('ratio_vs_cublaslt') or float('nan'):.2f})")
