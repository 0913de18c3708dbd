"""A5: chunked SSD with one decay per head (Mamba-2: a scalar per head and step) vs one decay per
state channel (GLA / HGRN2: a vector over N per head and step), same shapes and chunk size."""

from __future__ import annotations

from typing import Any

from flopkb.verify.context import Context
from flopkb.verify.experiments import _ssd
from flopkb.verify.experiments._common import (
    Judgement,
    Measurement,
    judge_ratio,
    point_row,
    ratio_of,
    size_of,
    ssd_inputs,
    ssd_prefix,
)
from flopkb.verify.stats import ratio_interval

DEFAULTS: dict[str, Any] = {"state_dim": 64, "head_dim": 64, "heads": 32, "tokens": 32768,
                            "seq_len": 4096, "chunk_size": 64, "pass": "forward"}


def _log_decay(args: tuple, seed: int) -> Any:
    """Per-channel log decays [B, T, H, N]: dt * A_h scaled per channel by [0.5, 1.5]."""
    import torch

    x, dt, A, Bm = args[:4]
    n = Bm.shape[-1]
    g = torch.Generator(device="cpu").manual_seed(seed)
    scale = (torch.rand(n, generator=g) + 0.5).to(x.device)
    return ((dt * A)[..., None] * scale).contiguous()


def cpu_check(ctx: Context) -> None:
    import torch

    pc = ctx.load("ssd", "per_channel")
    ref = ctx.load("ssd", "reference")
    x, dt, A, Bm, Cm, D = ssd_inputs(2, 29, 4, 16, 16, dtype=torch.float32)
    g = _log_decay((x, dt, A, Bm, Cm, D), 0)
    ctx.check("ssd.per_channel.ssd_chunked_per_channel",
              pc.ssd_chunked_per_channel(x, dt, g, Bm, Cm, D, chunk_size=16),
              ref.ssd_per_channel_reference(x, dt, g, Bm, Cm, D))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    k = _ssd.kernels(ctx)
    pc = ctx.load("ssd", "per_channel")
    ref = ctx.load("ssd", "reference")
    chunk = int(cond["chunk_size"])
    t0, n0 = size_of(cond["seq_len"]), int(cond["state_dim"])
    pts = [(t0, n0)] + ([] if ctx.quick else [(t0, 128 if n0 != 128 else 64), (16384, n0)])
    rows = []
    for steps, dstate in pts:
        if not ctx.more(len(rows)):
            break
        with ctx.optional(len(rows)):
            shape = _ssd.shape_of(cond, steps, dstate)
            args = _ssd.make(ctx, shape)
            logd = _log_decay(args, 0)
            x, dt, _, Bm, Cm, D = args
            y_pc = pc.ssd_chunked_per_channel(x, dt, logd, Bm, Cm, D, chunk_size=chunk)
            y_sc = k["chunked"].ssd_chunked(*args, chunk_size=chunk)
            _ssd.check_against_reference(ctx, "ssd.chunked.ssd_chunked", y_sc, args)
            n = min(_ssd.PREFIX, steps)
            px, pdt, _, pB, pC, _ = ssd_prefix(args, n)
            ctx.check("ssd.per_channel.ssd_chunked_per_channel", y_pc[:1, :n],
                      ref.ssd_per_channel_reference(px, pdt, logd[:1, :n].contiguous(), pB, pC, D))
            f, b = _ssd.costs(ctx, "chunked", shape, chunk)
            extra = logd.numel() * 4
            tag = f"T={steps} N={dstate}"
            t_sc = ctx.time(f"scalar decay {tag}", lambda *a: k["chunked"].ssd_chunked(
                *a, chunk_size=chunk), [args], flops=f, nbytes=b, **shape)
            t_pc = ctx.time(f"per-channel decay {tag}", lambda *a: pc.ssd_chunked_per_channel(
                *a, chunk_size=chunk), [(x, dt, logd, Bm, Cm, D)], flops=f, nbytes=b + extra,
                **shape)
            r = ratio_interval(t_pc, t_sc)
            rows.append(point_row(seq_len=steps, state_dim=dstate, scalar_ms=t_sc.median_ms,
                                  per_channel_ms=t_pc.median_ms, ratio=r.value, ratio_low=r.low,
                                  ratio_high=r.high))
    plot = {"kind": "bars", "x": "label", "xlabel": "point", "ylabel": "time (ms)",
            "series": {"one decay per head": "scalar_ms",
                       "one decay per channel": "per_channel_ms"}}
    for r in rows:
        r["label"] = f"T={r['seq_len']} N={r['state_dim']}"
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    p = m.data["primary"]
    return judge_ratio(
        ratio_of(p), mag,
        what=f"t(per-channel decay) / t(per-head decay), chunked, T={p['seq_len']}, "
        f"N={p['state_dim']}",
        qualitative="qualitative 'shared decay is cheaper': ratio interval above 1.05 confirms, "
        "below 1 refutes",
    )
