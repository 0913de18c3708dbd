"""B6, the measurable half of "no softmax: simpler": the share of forward time spent off the
tensor cores (SIMT work) in chunked SSD and in softmax attention at equal shapes (batch, length,
heads, head dimension), and their ratio.

SSD: the bundled `ssd_chunked_stages`, stage by stage; the matmul stages are the chunked
kernel's MATMUL_STAGES (chunk_bmm, chunk_state, chunk_scan), the rest (state_passing, the
recurrence across chunks) is SIMT work. The decay exponentials inside the matmul kernels count as
matmul-stage time, so SSD's SIMT share is if anything understated.
Attention: causal softmax attention as its three stages in torch: scores = q k^T * scale
(cuBLAS), the causal mask and softmax (SIMT, memory-bound over the T x T scores), o = p v
(cuBLAS). A fused kernel (FlashAttention) overlaps its softmax with the matmuls, so the unfused
share is the softmax's cost where it is not hidden, not FlashAttention's profile.

The expressivity half ("may limit competitive attention patterns") is a modelling question no
kernel timing answers; the claim row says so.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row, ratio_of, size_of
from flopkb.evidence.stats import Interval
from flopkb.verify.experiments._sweep_points import claim_then

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"state_dim": 64, "head_dim": 64, "heads": 32, "tokens": 16384,
                            "seq_len": 4096, "chunk_size": 64, "pass": "forward"}
LENGTHS = (8192,)


def _attention_stages(q: Any, k: Any, v: Any) -> tuple[dict[str, Any], Any]:
    """{stage: zero-argument callable} of causal softmax attention in [B, H, T, D] buffers, and
    the callable that runs them all and returns o [B, T, H, D]."""
    import torch

    qh, kh, vh = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    t, d = q.shape[1], q.shape[3]
    scale = 1.0 / math.sqrt(d)
    future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    buf: dict[str, Any] = {}

    def scores() -> None:
        buf["s"] = torch.matmul(qh, kh.transpose(-1, -2)) * scale

    def softmax() -> None:
        buf["p"] = buf["s"].masked_fill(future, float("-inf")).softmax(dim=-1)

    def pv() -> None:
        buf["o"] = torch.matmul(buf["p"], vh)

    stages = {"scores": scores, "softmax": softmax, "pv": pv}

    def run() -> Any:
        for fn in stages.values():
            fn()
        return buf["o"].transpose(1, 2)

    return stages, run


def _share(simt: list[Any], matmul: list[Any]) -> Interval:
    """SIMT share of the summed stage times, with the corners of the bands."""
    s, m = stats.sum_interval(simt), stats.sum_interval(matmul)
    return Interval(s.value / (s.value + m.value), s.low / (s.low + m.high),
                    s.high / (s.high + m.low))


def cpu_check(ctx: Context) -> None:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    ref = ctx.load("attention", "reference")
    k = ssd_bench.kernels()
    args = ssd_bench.ssd_inputs(1, 40, 2, 16, 16, dtype=torch.float32)
    run = k["chunked"].ssd_chunked_stages(*args, chunk_size=16)
    ctx.check("ssd.chunked.ssd_chunked_stages", run(), k["reference"].ssd_reference(*args))
    g = torch.Generator().manual_seed(0)
    q, kk, v = (torch.randn(2, 37, 3, 16, generator=g) for _ in range(3))
    ctx.check("unfused causal softmax attention", _attention_stages(q, kk, v)[1](),
              ref.causal_attention_reference(q, kk, v))


def _point(ctx: Context, cond: dict[str, Any], steps: int) -> dict[str, Any]:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    ref = ctx.load("attention", "reference")
    k = ssd_bench.kernels()
    chunk = int(cond["chunk_size"])
    shape = ssd_bench.shape_of(cond, steps)
    args = ssd_bench.make(ctx, shape)
    run = k["chunked"].ssd_chunked_stages(*args, chunk_size=chunk)
    ssd_bench.check_against_reference(ctx, "ssd.chunked.ssd_chunked_stages", run(), args)
    matmul_stages = set(getattr(k["chunked"], "MATMUL_STAGES", ("chunk_state", "chunk_scan")))
    tag = f"T={steps}"
    ssd_t = {n: ctx.time(f"ssd {n} {tag}", fn, [()], **shape) for n, fn in run.stages.items()}
    b, h, d = shape["batch"], shape["heads"], shape["headdim"]
    gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed(1))
    q, kk, v = (torch.randn(b, steps, h, d, generator=gen, device=ctx.device,
                            dtype=args[0].dtype) for _ in range(3))
    stages, attn = _attention_stages(q, kk, v)
    ctx.check("unfused causal softmax attention (first sequence)", attn()[:1],
              ref.causal_attention_reference(q[:1], kk[:1], v[:1]))
    att_t = {s: ctx.time(f"attention {s} {tag}", fn, [()], **shape) for s, fn in stages.items()}
    ssd_share = _share([t for s, t in ssd_t.items() if s not in matmul_stages],
                       [t for s, t in ssd_t.items() if s in matmul_stages])
    att_share = _share([att_t["softmax"]], [att_t["scores"], att_t["pv"]])
    ratio = stats.divide(att_share, ssd_share)
    return point_row(seq_len=steps, ssd_simt_share=ssd_share.value,
                     ssd_simt_share_low=ssd_share.low, ssd_simt_share_high=ssd_share.high,
                     attention_simt_share=att_share.value,
                     attention_simt_share_low=att_share.low,
                     attention_simt_share_high=att_share.high,
                     ratio=ratio.value, ratio_low=ratio.low, ratio_high=ratio.high,
                     **{f"ssd_{s}_ms": t.median_ms for s, t in ssd_t.items()},
                     **{f"attention_{s}_ms": t.median_ms for s, t in att_t.items()})


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ctx.describe_impl("ssd", "bundled ssd_chunked_stages")
    ctx.describe_impl("attention", "torch matmul / masked softmax / matmul (cuBLAS)")
    t0 = size_of(cond["seq_len"])
    rows = []
    for steps, guarded in ctx.sweep(claim_then(t0, LENGTHS, ctx.quick), rows):
        with guarded:
            rows.append(_point(ctx, cond, steps))
    plot = {"kind": "lines", "x": "seq_len", "xlabel": "sequence length",
            "ylabel": "SIMT (non-matmul) share of forward time", "logx": True,
            "series": {"softmax attention": "attention_simt_share",
                       "chunked SSD": "ssd_simt_share"}}
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Experiment) -> Judgement:
    p = m.data["primary"]
    measured = ratio_of(p)
    return Judgement(
        measured, "x",
        f"SIMT share of softmax attention's forward ({p['attention_simt_share']:.3g}) over "
        f"chunked SSD's ({p['ssd_simt_share']:.3g}), equal shapes, T={p['seq_len']}",
        stats.decide_above(measured, 1.0),
        declaration.qualitative_criterion)
