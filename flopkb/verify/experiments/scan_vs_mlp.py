"""A4: a Mamba-1 layer's forward (in_proj GEMM, selective scan, out_proj GEMM) vs an MLP layer's
(up and down GEMMs) at the same model width d and token count.

Mamba-1 with expand 2 has D = 2d channels: in_proj d -> 2D (x and gate), out_proj D -> d; the MLP
is d -> 4d -> d. The Mamba side leaves out the depthwise conv, x_proj and dt_proj (small), so the
measured ratio understates the Mamba layer's time: the comparison leans against the claim.
Forward only: the claim speaks of training; the backward pass is not measured.
"""

from __future__ import annotations

from typing import Any

from flopkb.verify.context import Context
from flopkb.verify.experiments import _gemm, _scan
from flopkb.verify.experiments._common import (
    Judgement,
    Measurement,
    judge_ratio,
    point_row,
    ratio_of,
    selective_inputs,
)
from flopkb.verify.stats import divide, sum_interval

DEFAULTS: dict[str, Any] = {"d_model": 2048, "state_dim": 16, "tokens": 16384, "seq_len": 4096,
                            "pass": "forward"}


def cpu_check(ctx: Context) -> None:
    import torch

    cublas = ctx.load("gemm", "cublas")
    ref = ctx.load("gemm", "reference")
    a, b = torch.randn(9, 24).to(torch.bfloat16), torch.randn(24, 40).to(torch.bfloat16)
    ctx.check("gemm.cublas.torch_matmul", cublas.torch_matmul(a, b), ref.matmul_reference(a, b))
    scan = ctx.load("selective_scan", "scan")
    sref = ctx.load("selective_scan", "reference")
    args = selective_inputs(1, 5, 17, 4, dtype=torch.float32)
    ctx.check("selective_scan.scan.selective_scan", scan.selective_scan(*args),
              sref.selective_scan_reference(*args))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    cublas = ctx.load("gemm", "cublas")
    scan = _scan.scan_impl(ctx)
    scost = ctx.load("selective_scan", "cost")
    d, tokens, steps = int(cond["d_model"]), int(cond["tokens"]), int(cond["seq_len"])
    dim, batch = 2 * d, max(1, tokens // steps)
    mm = cublas.torch_matmul
    t_in = _gemm.timed_matmul(ctx, "in_proj", mm, tokens, d, 2 * dim)
    t_out = _gemm.timed_matmul(ctx, "out_proj", mm, tokens, dim, d)
    t_up = _gemm.timed_matmul(ctx, "mlp_up", mm, tokens, d, 4 * d)
    t_down = _gemm.timed_matmul(ctx, "mlp_down", mm, tokens, 4 * d, d)
    mlp = sum_interval([t_up, t_down])
    rows = []
    n0 = int(cond["state_dim"])
    for dstate in [n0] + ([] if ctx.quick else [n for n in (16, 64) if n != n0]):
        if not ctx.more(len(rows)):
            break
        with ctx.optional(len(rows)):
            args = _scan.layer_inputs(batch, dim, steps, dstate, device=ctx.device)
            _scan.check(ctx, "selective scan", scan(*args), args)
            t_s = ctx.time(f"selective_scan N={dstate}", scan.fn, [args],
                           flops=scost.flops(batch, dim, steps, dstate),
                           nbytes=scost.bytes_moved(batch, dim, steps, dstate),
                           batch=batch, dim=dim, steps=steps, dstate=dstate)
            mamba = sum_interval([t_in, t_s, t_out])
            r = divide(mamba, mlp)
            rows.append(point_row(state_dim=dstate, mamba_ms=mamba.value, scan_ms=t_s.median_ms,
                                  mlp_ms=mlp.value, ratio=r.value, ratio_low=r.low,
                                  ratio_high=r.high))
    plot = {"kind": "bars", "x": "state_dim", "xlabel": "state size N",
            "ylabel": "forward time (ms)",
            "series": {"Mamba-1 layer (proj + scan)": "mamba_ms", "MLP 4d": "mlp_ms"}}
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    p = m.data["primary"]
    return judge_ratio(
        ratio_of(p), mag,
        what=f"t(Mamba-1 layer fwd) / t(MLP layer fwd), d={cond['d_model']}, N={p['state_dim']}",
        qualitative="qualitative 'slower': ratio interval above 1.05 confirms, below 1 refutes",
    )
