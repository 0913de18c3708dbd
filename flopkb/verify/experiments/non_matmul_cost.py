"""FlashAttention-2's non-matmul cost (Dao 2023, Sec. 3.1): how many times a matmul FLOP outruns
an FP32 non-matmul FLOP on this part, measured, beside the datasheet ratio the KB computes
(tensor_to_simt_ratio = bf16_tensor_flops / fp32_simt_flops).

Measured: a bf16 cuBLAS GEMM's achieved FLOP/s over the achieved FLOP/s of a compute-bound FP32
chain on the CUDA cores (`kernels/nonmatmul/forward.py`). The verdict reads the fma chain (one fused
multiply-add, 2 FLOPs: the instruction the datasheet's FP32 rate counts); the exp chain
(multiply, exp2, fma: 4 FLOPs counting exp2 as one, the softmax's kind of work) is reported beside
it. FLOPs are counted explicitly per call; nothing is read from a profiler.

A figure for one part ("16x on A100") is judged only on that part: the claim link's `judged_on`
lists it, and on any other part verify records this measurement as not-applicable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement, judge_ratio
from flopkb.evidence.stats import Interval, ratio_interval
from flopkb.hardware.model import HardwareModel

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"size": 8192, "elements": 1 << 25, "iters": 256, "pass": "forward"}
# elements of the chain checked against the float64 reference, and the short chain checked too
# (a long fma chain keeps a^iters of its input; a long exp chain converges: the short one still
# tells every element apart)
CHECKED = 1 << 16
SHORT_ITERS = 8


def cpu_check(ctx: Context) -> None:
    import torch

    chain = ctx.load("nonmatmul", "forward")
    ref = ctx.load("nonmatmul", "reference")
    x = -torch.rand(3000)
    for mode in ("fma", "exp"):
        for iters in (1, 9):
            ctx.check(f"nonmatmul.forward.fp32_chain[{mode}, {iters}]",
                      chain.fp32_chain(x, iters, mode), ref.fp32_chain_reference(x, iters, mode))
    cublas = ctx.load("gemm", "cublas")
    gref = ctx.load("gemm", "reference")
    a, b = torch.randn(9, 24).to(torch.bfloat16), torch.randn(24, 40).to(torch.bfloat16)
    ctx.check("gemm.cublas.torch_matmul", cublas.torch_matmul(a, b), gref.matmul_reference(a, b))


def _datasheet(ctx: Context) -> dict[str, Any]:
    """tensor_to_simt_ratio of the part this run is on (the accelerator record the run matched),
    as the KB computes it (None off a GPU or when no accelerator record matches)."""
    acc_id = ctx.accelerator if ctx.kb is not None and ctx.gpu else None
    if acc_id is None:
        return {"accelerator": None, "tensor_to_simt_ratio": None}
    value = HardwareModel(ctx.kb).value(ctx.kb.accelerators[acc_id], "tensor_to_simt_ratio")
    return {"accelerator": acc_id, "tensor_to_simt_ratio": value.value}


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    import torch

    gemm_bench = ctx.load("gemm", "bench")
    chain = ctx.load("nonmatmul", "forward")
    ref = ctx.load("nonmatmul", "reference")
    cost = ctx.load("nonmatmul", "cost")
    cublas = ctx.load("gemm", "cublas")
    size, n, iters = int(cond["size"]), int(cond["elements"]), int(cond["iters"])
    t_g = gemm_bench.timed_matmul(ctx, "gemm bf16", cublas.torch_matmul, size, size, size)
    gemm_flops = ctx.timings["gemm bf16"]["flops"]
    g = torch.Generator(device=ctx.device).manual_seed(ctx.seed(0))
    x = -torch.rand(n, device=ctx.device, generator=g)
    data: dict[str, Any] = {"gemm_tflops": ctx.timings["gemm bf16"].get("tflops"),
                            "datasheet": _datasheet(ctx)}
    rows = []
    for mode in ("fma", "exp"):
        label = f"fp32 {mode} chain"
        head = x[:CHECKED]
        for k in (SHORT_ITERS, iters):
            ctx.check(f"{label} x{k}", chain.fp32_chain(head.contiguous(), k, mode),
                      ref.fp32_chain_reference(head, k, mode))
        flops = cost.flops(n, iters, mode)
        t_c = ctx.time(label, lambda v, m=mode: chain.fp32_chain(v, iters, m), [(x,)],
                       flops=flops, nbytes=cost.bytes_moved(n), n=n, iters=iters, mode=mode)
        # (F_gemm / t_gemm) / (F_chain / t_chain) = F_gemm / F_chain * t_chain / t_gemm
        r = ratio_interval(t_c, t_g)
        scale = gemm_flops / flops
        ratio = {"value": r.value * scale, "low": r.low * scale, "high": r.high * scale}
        data[f"ratio_{mode}"] = ratio
        data[f"{mode}_tflops"] = ctx.timings[label].get("tflops")
        rows.append({"chain": mode, "chain_ms": t_c.median_ms, "gemm_ms": t_g.median_ms,
                     "ratio": ratio["value"], "ratio_low": ratio["low"],
                     "ratio_high": ratio["high"]})
    sheet = data["datasheet"]["tensor_to_simt_ratio"]
    bars = {"measured (fma chain)": data["ratio_fma"]["value"],
            "measured (exp chain)": data["ratio_exp"]["value"]}
    if sheet is not None:
        bars["datasheet tensor_to_simt_ratio"] = sheet
    plot = {"kind": "category", "xlabel": "", "ylabel": "matmul FLOP/s / non-matmul FLOP/s",
            "categories": {"ratio": bars}, "logy": False,
            # the bars are the measurement; the rows (fma, exp) sweep nothing to draw a line over
            "measure_panel": False}
    return Measurement(data, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Experiment) -> Judgement:
    r = m.data["ratio_fma"]
    sheet = (m.data.get("datasheet") or {}).get("tensor_to_simt_ratio")
    beside = f"; datasheet ratio {sheet:.3g}" if isinstance(sheet, (int, float)) else ""
    return judge_ratio(
        Interval.from_dict(r), mag,
        what=f"bf16 GEMM FLOP/s / FP32 fma-chain FLOP/s{beside}",
        qualitative=declaration.qualitative_criterion,
    )
