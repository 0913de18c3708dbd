"""A5: chunked SSD with one decay per head (Mamba-2: a scalar per head and step) vs one decay per
state channel (GLA / HGRN2: a vector over N per head and step), same shapes and chunk size."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Measurement, point_row, primary_ratio_judge, size_of
from flopkb.evidence.stats import ratio_interval

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/decay-granularity.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}


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

    ssd_bench = ctx.load("ssd", "bench")
    pc = ctx.load("ssd", "per_channel")
    ref = ctx.load("ssd", "reference")
    x, dt, A, Bm, Cm, D = ssd_bench.ssd_inputs(2, 29, 4, 16, 16, dtype=torch.float32)
    g = _log_decay((x, dt, A, Bm, Cm, D), 0)
    ctx.check("ssd.per_channel.ssd_chunked_per_channel",
              pc.ssd_chunked_per_channel(x, dt, g, Bm, Cm, D, chunk_size=16),
              ref.ssd_per_channel_reference(x, dt, g, Bm, Cm, D))


def _pair(ctx: Context, chunk: int) -> tuple[Any, Any, Callable[[tuple, Any], tuple]]:
    """(scalar-decay fn, per-channel-decay fn, prepare(ssd args, log decay) -> (scalar args,
    per-channel args)) for the implementation chosen for the "kernels" side: the bundled chunked
    kernels, or fla's chunk_simple_gla (one decay per head) and chunk_gla (one per key
    channel), called with SSD's arguments (q = C, k = B per head, v = x * dt) plus the D skip."""
    ssd_bench = ctx.load("ssd", "bench")
    if ctx.impl("kernels") == "fla":
        from flopkb.verify.peers import fla

        ops, version = fla.ops()
        ctx.describe_impl("kernels", f"peer:{version} chunk_simple_gla vs chunk_gla")

        def prepare_fla(args: tuple, logd: Any) -> tuple[tuple, tuple]:
            q, k, v, g, x, D = ssd_bench.gla_inputs(args)
            return (q, k, v, g, x, D), (q, k, v, logd, x, D)

        gla = ssd_bench.gla_as_ssd
        return gla(ops["chunk_simple_gla"]), gla(ops["chunk_gla"]), prepare_fla
    k = ssd_bench.kernels()
    pc = ctx.load("ssd", "per_channel")
    ctx.describe_impl("kernels", "bundled ssd_chunked vs ssd_chunked_per_channel")

    def prepare(args: tuple, logd: Any) -> tuple[tuple, tuple]:
        x, dt, _, Bm, Cm, D = args
        return args, (x, dt, logd, Bm, Cm, D)

    return (lambda *a: k["chunked"].ssd_chunked(*a, chunk_size=chunk),
            lambda *a: pc.ssd_chunked_per_channel(*a, chunk_size=chunk), prepare)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    ref = ctx.load("ssd", "reference")
    chunk = int(cond["chunk_size"])
    scalar_fn, channel_fn, prepare = _pair(ctx, chunk)
    t0, n0 = size_of(cond["seq_len"]), int(cond["state_dim"])
    pts = [(t0, n0)] + ([] if ctx.quick else [(t0, 128 if n0 != 128 else 64), (16384, n0)])
    rows = []
    for (steps, dstate), guarded in ctx.sweep(pts, rows):
        with guarded:
            shape = ssd_bench.shape_of(cond, steps, dstate)
            args = ssd_bench.make(ctx, shape)
            logd = _log_decay(args, 0)
            _, _, _, _, _, D = args
            sc_args, pc_args = prepare(args, logd)
            y_pc = channel_fn(*pc_args)
            y_sc = scalar_fn(*sc_args)
            ssd_bench.check_against_reference(ctx, "one decay per head", y_sc, args)
            n = min(ssd_bench.PREFIX, steps)
            px, pdt, _, pB, pC, _ = ssd_bench.ssd_prefix(args, n)
            ctx.check("one decay per channel", y_pc[:1, :n],
                      ref.ssd_per_channel_reference(px, pdt, logd[:1, :n].contiguous(), pB, pC, D))
            f, b = ssd_bench.costs("chunked", shape, chunk)
            extra = logd.numel() * 4
            tag = f"T={steps} N={dstate}"
            t_sc = ctx.time(f"scalar decay {tag}", scalar_fn, [sc_args], flops=f, nbytes=b,
                            **shape)
            t_pc = ctx.time(f"per-channel decay {tag}", channel_fn, [pc_args], flops=f,
                            nbytes=b + extra, **shape)
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


judge = primary_ratio_judge(
    lambda p, cond: f"t(per-channel decay) / t(per-head decay), chunked, T={p['seq_len']}, "
    f"N={p['state_dim']}")
