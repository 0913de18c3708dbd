"""B5: the dedicated chunked SSD kernel vs plain PyTorch computing the same function. The plain
PyTorch side is the fastest of the PyTorch forms in kernels/ssd/reference.py that fit in memory:
the step-by-step recurrence and the masked quadratic einsum (and a chunked einsum form when the
reference module provides one), so the kernel is compared with the best plain alternative."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement, judge_ratio, point_row, ratio_of
from flopkb.evidence.stats import ratio_interval
from flopkb.verify.errors import ExperimentError

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment
    from flopkb.verify.context import Context

# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/kernel-vs-pytorch.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}
FULL = (512, 2048)
# The verdict is read at T=2048 in every mode and for every implementation: a reading point that
# cannot move between runs, combinations or --quick.
READ_AT = 2048
QUICK = (READ_AT,)
# The quadratic einsum materialises several [B, H, T, T] fp32 tensors: keep it under ~24 GB.
QUAD_LIMIT_BYTES = 24 * 2**30


def cpu_check(ctx: Context) -> None:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    ref = ctx.load("ssd", "reference")
    args = ssd_bench.ssd_inputs(1, 21, 2, 8, 8, dtype=torch.float64)
    ctx.check("ssd.reference quadratic vs recurrence", ref.ssd_quadratic_reference(*args),
              ref.ssd_reference(*args), tol=1e-9)


def _torch_forms(ref: Any, shape: dict[str, int]) -> dict[str, Any]:
    forms = {"recurrence": ref.ssd_reference}
    quad_bytes = 5 * shape["batch"] * shape["heads"] * shape["steps"] ** 2 * 4
    if quad_bytes <= QUAD_LIMIT_BYTES:
        forms["quadratic einsum"] = ref.ssd_quadratic_reference
    for name in ("ssd_chunked_reference", "ssd_minimal"):
        if hasattr(ref, name):
            forms["chunked einsum"] = getattr(ref, name)
    return forms


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    k = ssd_bench.kernels()
    chunk = int(cond["chunk_size"])
    ssd = ssd_bench.chunked_impl(ctx, chunk)
    rows = []
    for steps, guarded in ctx.sweep(QUICK if ctx.quick else FULL, rows):
        with guarded:
            shape = ssd_bench.shape_of({**cond, "tokens": int(cond["batch"]) * steps}, steps)
            args = ssd_bench.make(ctx, shape)
            y = ssd(*args)
            ssd_bench.check_against_reference(ctx, "chunked SSD kernel", y, args)
            f, b = ssd_bench.costs("chunked", shape, chunk)
            t_k = ctx.time(f"kernel T={steps}", ssd.fn, ssd.sets([args]), flops=f, nbytes=b,
                           **shape)
            best = None
            row = point_row(seq_len=steps, kernel_ms=t_k.median_ms)
            for name, fn in _torch_forms(k["reference"], shape).items():
                ctx.check(f"pytorch {name} vs kernel", fn(*args), y.float())
                t = ctx.time(f"pytorch {name} T={steps}", fn, [args], **shape)
                row[f"{name}_ms"] = t.median_ms
                if best is None or t.median_ms < best[1].median_ms:
                    best = (name, t)
            r = ratio_interval(best[1], t_k)
            row.update(best_pytorch=best[0], pytorch_ms=best[1].median_ms, ratio=r.value,
                       ratio_low=r.low, ratio_high=r.high)
            rows.append(row)
    plot = {"kind": "bars", "x": "seq_len", "xlabel": "sequence length", "ylabel": "time (ms)",
            "series": {"fastest plain PyTorch": "pytorch_ms", "chunked kernel": "kernel_ms"},
            "logy": True}
    return Measurement({"primary": rows[-1]}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Experiment) -> Judgement:
    p = next((r for r in m.sweep if r.get("seq_len") == READ_AT), None)
    if p is None:
        raise ExperimentError(f"the reading point T={READ_AT} was not measured")
    return judge_ratio(
        ratio_of(p), mag,
        what=f"t(fastest plain PyTorch: {p['best_pytorch']}) / t(chunked kernel), "
        f"T={p['seq_len']}",
        qualitative=declaration.qualitative_criterion,
    )
