"""B3: the chunked SSD vs the quadratic (masked, attention-like) SSD form over sequence length at a
fixed token count. The quadratic form does O(T^2) work in one pass; the chunked one O(T Q) plus
three launches and a state round trip through memory, so it should lose at short lengths."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row, ratio_of
from flopkb.evidence.stats import Interval, ratio_interval

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/chunked-vs-quadratic.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}
FULL = (64, 128, 256, 512, 1024, 2048, 4096)
QUICK = (64, 256, 1024, 4096)


def cpu_check(ctx: Context) -> None:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    quad = ctx.load("ssd", "quadratic")
    ref = ctx.load("ssd", "reference")
    args = ssd_bench.ssd_inputs(2, 33, 4, 16, 16, groups=2, dtype=torch.float32)
    ctx.check("ssd.quadratic.ssd_quadratic", quad.ssd_quadratic(*args),
              ref.ssd_quadratic_reference(*args))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    k = ssd_bench.kernels()
    quad = ctx.load("ssd", "quadratic")
    chunk = int(cond["chunk_size"])
    rows = []
    for steps, guarded in ctx.sweep(QUICK if ctx.quick else FULL, rows):
        with guarded:
            shape = ssd_bench.shape_of(cond, steps)
            args = ssd_bench.make(ctx, shape)
            y_q = quad.ssd_quadratic(*args)
            y_c = k["chunked"].ssd_chunked(*args, chunk_size=chunk)
            ssd_bench.check_against_reference(ctx, "ssd.quadratic.ssd_quadratic", y_q, args)
            ssd_bench.check_against_reference(ctx, "ssd.chunked.ssd_chunked", y_c, args)
            sets = ssd_bench.arg_sets(ctx, shape, args)
            f_c, b_c = ssd_bench.costs("chunked", shape, chunk)
            f_q, b_q = ssd_bench.costs("quadratic", shape)
            t_c = ctx.time(f"chunked T={steps}", lambda *a: k["chunked"].ssd_chunked(
                *a, chunk_size=chunk), sets, flops=f_c, nbytes=b_c, **shape)
            t_q = ctx.time(f"quadratic T={steps}", quad.ssd_quadratic, sets, flops=f_q, nbytes=b_q,
                           **shape)
            r = ratio_interval(t_q, t_c)
            rows.append(point_row(seq_len=steps, quadratic_ms=t_q.median_ms,
                                  chunked_ms=t_c.median_ms,
                                  ratio=r.value, ratio_low=r.low, ratio_high=r.high))
    cross = stats.crossover([r["seq_len"] for r in rows],
                            [ratio_of(r) for r in rows])
    plot = {"kind": "lines", "x": "seq_len", "xlabel": "sequence length (fixed tokens)",
            "ylabel": "time (ms)", "series": {"quadratic form": "quadratic_ms",
                                              "chunked": "chunked_ms"},
            "logx": True, "logy": True, "vline": cross.value, "vline_label": "crossover"}
    return Measurement({"crossover": cross.as_dict()}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    c = m.data["crossover"]
    cross = Interval.from_dict(c)
    what = "length above which chunked beats quadratic (t_quadratic / t_chunked crosses 1)"
    if mag is not None and mag.kind == "crossover":
        return Judgement(cross, "tokens", what, stats.decide_crossover(cross, mag.low),
                         "crossover interval inside the claimed length x/÷ sqrt 2")
    first, last = m.sweep[0], m.sweep[-1]
    short = ratio_of(first)
    long = ratio_of(last)
    quad_faster_short = stats.decide_below(short, 1.0 / (1 + stats.QUALITATIVE_MARGIN), margin=0)
    chunk_faster_long = stats.decide_above(long, 1.0)
    if quad_faster_short == "confirmed" and chunk_faster_long == "confirmed":
        verdict = "confirmed"
    elif stats.decide_above(short, 1.0, margin=0) == "confirmed":
        verdict = "refuted"
    else:
        verdict = "inconclusive"
    return Judgement(cross, "tokens", what, verdict,
                     f"qualitative: quadratic faster at T={first['seq_len']} (t_q/t_c interval "
                     f"below 1/1.05) and chunked faster at T={last['seq_len']} confirms; chunked "
                     "already faster at the shortest length refutes")
