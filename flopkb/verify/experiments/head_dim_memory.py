"""B2: does a head dimension of P = 128 raise VRAM pressure? Peak device memory of a chunked-SSD
training step (forward+backward) at P = 64 and P = 128 at equal model width H * P.

What is measured: `torch.cuda.max_memory_allocated` during the timed step minus what was
allocated before it (the inputs and their gradient leaves), i.e. what the step itself adds:
saved activations, gradients, workspace. At equal width the SSM state (H * P * N per sequence)
is the same for both P; per-head buffers (the intra-chunk [Q, Q] decay/score blocks, one per head)
halve with P = 128. A second point keeps the head count and doubles the width (P = 128, H = 32):
the reading where P = 128 grows the layer. The verdict reads the equal-width pair, the claim's
own comparison as the issue states it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row, size_of
from flopkb.evidence.stats import Interval
from flopkb.verify.errors import ExperimentError, PeerUnavailable
from flopkb.verify.experiments import _training

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"width": 2048, "state_dim": 128, "tokens": 32768, "seq_len": 4096,
                            "chunk_size": 64, "head_dim": 128, "base_head_dim": 64,
                            "pass": "forward+backward"}
PASSES = ("forward+backward",)
THRESHOLD = 1.0


def cpu_check(ctx: Context) -> None:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    k = ssd_bench.kernels()
    args = ssd_bench.ssd_inputs(1, 37, 2, 8, 8, dtype=torch.float32)
    _training.check_grads(ctx, "ssd.chunked.ssd_chunked backward",
                          lambda *a: k["chunked"].ssd_chunked(*a, chunk_size=16),
                          k["reference"].ssd_reference, args, tuple(range(6)),
                          ("x", "dt", "A", "B", "C", "D"))


def _point(ctx: Context, ssd: Any, cond: dict[str, Any], heads: int, headdim: int,
           chunk: int) -> dict[str, Any]:
    ssd_bench = ctx.load("ssd", "bench")
    steps = size_of(cond["seq_len"])
    shape = ssd_bench.shape_of({**cond, "heads": heads, "head_dim": headdim}, steps)
    args = ssd_bench.make(ctx, shape)
    ssd_bench.check_against_reference(ctx, f"ssd chunked P={headdim}", ssd(*args), args)
    label = f"ssd P={headdim} H={heads} forward+backward"
    t = _training.optional_step(ctx, label, ssd.fn, ssd.prepare(args), "forward+backward",
                                **shape)
    if t is None:
        # a peer without a working backward has no training step to measure; ours must have one
        if ctx.impl("ssd") == "bundled":
            raise ExperimentError(ctx.notes[-1])
        raise PeerUnavailable(ctx.notes[-1])
    entry = ctx.timings[label]
    if "step_extra_mem_bytes" not in entry:
        raise ExperimentError("no device memory statistics (needs CUDA)")
    return point_row(head_dim=headdim, heads=heads, width=heads * headdim,
                     label=f"P={headdim}, H={heads} (width {heads * headdim})", step_ms=t.median_ms,
                     step_extra_gib=entry["step_extra_mem_bytes"] / 2**30,
                     peak_gib=entry["peak_mem_bytes"] / 2**30)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    chunk = int(cond["chunk_size"])
    ssd = ssd_bench.chunked_impl(ctx, chunk)
    width, p, base = int(cond["width"]), int(cond["head_dim"]), int(cond["base_head_dim"])
    if width % p or width % base:
        raise ExperimentError(f"width {width} is not a multiple of P={p} and P={base}")
    rows = [_point(ctx, ssd, cond, width // base, base, chunk),
            _point(ctx, ssd, cond, width // p, p, chunk)]
    if not ctx.quick and ctx.more(len(rows)):
        with ctx.optional(len(rows)):
            rows.append(_point(ctx, ssd, cond, width // base, p, chunk))
    base, claimed = rows[0]["step_extra_gib"], rows[1]["step_extra_gib"]
    ratio = claimed / base if base else float("inf")
    plot = {"kind": "bars", "x": "label", "xlabel": "head dimension P, heads H",
            "ylabel": "training-step memory (GiB)",
            "series": {"added by the step": "step_extra_gib", "peak": "peak_gib"}}
    return Measurement({"ratio": ratio, "base": rows[0], "claimed": rows[1]}, rows, dict(cond),
                       plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    r = m.data["ratio"]
    # allocation sizes are deterministic: the interval is the value itself
    measured = Interval(r, r, r)
    p, base = cond["head_dim"], cond["base_head_dim"]
    if mag is not None and mag.kind == "value" and mag.low is not None and mag.low != p:
        return Judgement(measured, "x", "", "error", "",
                         reason=f"magnitude {mag.text!r} names P={mag.low:g}, the experiment ran "
                         f"P={p}: set conditions.head_dim")
    return Judgement(
        measured, "x",
        f"training-step memory at P={p} / at P={base}, equal width {cond['width']}, "
        f"N={cond['state_dim']}",
        stats.decide_above(measured, THRESHOLD),
        f"'P={p} raises VRAM pressure': the memory a forward+backward step adds at P={p} over "
        f"P={base} at equal width above 1.05 confirms, below 1 refutes",
    )
