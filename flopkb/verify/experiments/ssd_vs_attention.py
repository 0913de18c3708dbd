"""A3: SSD (chunked) vs causal FlashAttention-2 (torch SDPA with the flash backend forced) over
sequence length at a fixed token count; q, k, v and x share the [B, T, H, 64] layout.

Reads a `crossover at L` magnitude as the length where t(attention) / t(SSD) crosses 1 for good
(log-log interpolation between swept lengths; the band from the ratio's p10/p90 corners), and an
`Rx at L` magnitude as the ratio at length L.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, judge_ratio, point_row, ratio_of
from flopkb.evidence.stats import Interval, ratio_interval
from flopkb.verify.errors import ExperimentError
from flopkb.verify.experiments import _training
from flopkb.verify.experiments._cpu_checks import check_causal_attention

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment
    from flopkb.verify.context import Context

# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/ssd-vs-attention.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}
# FlashAttention-2; tests driving this path on the CPU set "math".
BACKEND = "flash"
FULL = (512, 1024, 2048, 4096, 8192, 16384)
QUICK = (1024, 2048, 4096, 16384)


def cpu_check(ctx: Context) -> None:
    check_causal_attention(ctx, batch=2, heads=3)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    att = ctx.load("attention", "sdpa")
    aref = ctx.load("attention", "reference")
    acost = ctx.load("attention", "cost")
    chunk = int(cond["chunk_size"])
    ssd = ssd_bench.chunked_impl(ctx, chunk)
    backend_ran = None
    rows = []
    for steps, guarded in ctx.sweep(QUICK if ctx.quick else FULL, rows):
        with guarded:
            shape = ssd_bench.shape_of(cond, steps)
            args = ssd_bench.make(ctx, shape)
            y = ssd(*args)
            ssd_bench.check_against_reference(ctx, "ssd chunked", y, args)
            b, h, d = shape["batch"], shape["heads"], shape["headdim"]
            g = torch.Generator(device=ctx.device).manual_seed(ctx.seed(steps))
            qkv = tuple(torch.randn(b, steps, h, d, device=ctx.device, generator=g,
                                    dtype=torch.bfloat16)
                        for _ in range(3))
            o = att.causal_attention(*qkv, backend=BACKEND)
            n = min(ssd_bench.PREFIX * 2, steps)
            ctx.check(f"attention.sdpa.causal_attention[{BACKEND}]", o[:1, :n],
                      aref.causal_attention_reference(*(t[:1, :n] for t in qkv)))
            if backend_ran is None:
                backend_ran = att.attention_backend(*qkv, backend=BACKEND)
            sets = [qkv] + [
                tuple(torch.randn_like(t) for t in qkv)
                for _ in range(1, ctx.rotations(sum(t.numel() * 2 for t in qkv)))
            ]
            f_c, b_c = ssd_bench.costs("chunked", shape, chunk)
            t_c = ctx.time(f"ssd T={steps}", ssd.fn, ssd.sets(ssd_bench.arg_sets(ctx, shape, args)),
                           flops=f_c,
                           nbytes=b_c, **shape)
            t_a = ctx.time(f"attention T={steps}",
                           lambda *a: att.causal_attention(*a, backend=BACKEND), sets,
                           flops=acost.flops(b, steps, h, d),
                           nbytes=acost.bytes_moved(b, steps, h, d),
                           batch=b, steps=steps, heads=h, headdim=d)
            r = ratio_interval(t_a, t_c)
            row = point_row(seq_len=steps, batch=b, attention_ms=t_a.median_ms,
                            ssd_ms=t_c.median_ms, ratio=r.value, ratio_low=r.low,
                            ratio_high=r.high)
            if not ctx.quick:
                row.update(_training_point(ctx, ssd, att, shape, qkv))
            rows.append(row)
    xs = [r["seq_len"] for r in rows]
    ratios = [ratio_of(r) for r in rows]
    cross = stats.crossover(xs, ratios)
    plot = {"kind": "lines", "x": "seq_len", "xlabel": "sequence length (fixed tokens)",
            "ylabel": "time (ms)", "series": {"FlashAttention-2 (SDPA flash)": "attention_ms",
                                              "SSD chunked": "ssd_ms"},
            "logx": True, "logy": True, "vline": cross.value, "vline_label": "crossover"}
    data = {"crossover": cross.as_dict(), "attention_backend": backend_ran}
    trained = [r for r in rows if "train_ratio" in r]
    if len(trained) >= 2:
        data["train_crossover"] = stats.crossover(
            [r["seq_len"] for r in trained],
            [Interval(r["train_ratio"], r["train_ratio_low"], r["train_ratio_high"])
             for r in trained]).as_dict()
    return Measurement(data, rows, dict(cond), plot)


def _training_point(ctx: Context, ssd: Any, att: Any, shape: dict[str, int],
                    qkv: tuple) -> dict[str, Any]:
    """The same length as a training step (forward+backward; SDPA's own flash backward): where
    the crossover and the 16K ratio move in training. The verdict stays on the forward pass."""
    ssd_bench = ctx.load("ssd", "bench")
    fb = "forward+backward"
    steps = shape["steps"]
    t_c = _training.optional_step(ctx, f"ssd T={steps} {fb}", ssd.fn,
                                  ssd.prepare(ssd_bench.make(ctx, shape)), fb, **shape)
    t_a = _training.optional_step(ctx, f"attention T={steps} {fb}",
                                  lambda *a: att.causal_attention(*a, backend=BACKEND), qkv, fb,
                                  steps=steps)
    if t_c is None or t_a is None:
        return {}
    r = ratio_interval(t_a, t_c)
    return {"train_attention_ms": t_a.median_ms, "train_ssd_ms": t_c.median_ms,
            "train_ratio": r.value, "train_ratio_low": r.low, "train_ratio_high": r.high}


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Experiment) -> Judgement:
    rows = m.sweep
    if mag is not None and mag.kind == "crossover":
        c = m.data["crossover"]
        cross = Interval.from_dict(c)
        verdict = stats.decide_crossover(cross, mag.low)
        lo, hi = mag.low / stats.CROSSOVER_FACTOR, mag.low * stats.CROSSOVER_FACTOR
        return Judgement(cross, "tokens",
                         "sequence length where t(attention) / t(SSD) crosses 1 (SSD faster above)",
                         verdict, f"crossover interval inside [{lo:.0f}, {hi:.0f}] "
                         "(claimed length x/÷ sqrt 2)")
    # a ratio without its own length is read at the longest length of every sweep (16K), never
    # at whichever length a run reached last
    at = (mag.condition.get("at") if mag is not None else None) or FULL[-1]
    row = next((r for r in rows if r["seq_len"] == at), None)
    if row is None:
        raise ExperimentError(f"length {at} is not in the sweep {[r['seq_len'] for r in rows]}")
    return judge_ratio(
        ratio_of(row), mag,
        what=f"t(attention) / t(SSD) at T={at}",
        qualitative=declaration.qualitative_criterion,
    )
