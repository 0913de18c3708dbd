"""B1: share of the chunked SSD's time spent in its matmul (tensor-core) stages.

Forward: timed stage by stage through `ssd_chunked_stages` (chunk_state and chunk_scan are matmul
stages; state_passing is the short recurrence across chunks). Training (the claim's condition,
`pass: forward+backward`): the forward and the bundled backward run as one autograd step, and the
device time of each kernel is read from the CUDA kernel timeline (torch.profiler, CUPTI) over
ROUNDS rounds of REPS steps: a kernel is a matmul stage when it is one of MATMUL_KERNELS (the
tensor-core launches named in kernels/ssd/backward.py's docstring and the forward's), everything
else (state passing, the ddt reverse cumsum, the small dA/dD sums, torch's own elementwise and
copy kernels) counts against the claim. The band is the spread over rounds. The analytic FLOP
share of the forward's matmul terms is reported beside the time share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row, size_of
from flopkb.evidence.stats import Interval
from flopkb.verify.errors import ExperimentError
from flopkb.verify.experiments import _training
from flopkb.verify.experiments._sweep_points import claim_then

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment
    from flopkb.verify.context import Context

# The conditions it runs under where a claim row sets none: the declaration's `point`
# (experiments/ssd-matmul-share.yaml), which completes this.
DEFAULTS: dict[str, Any] = {}
PASSES = ("forward", "forward+backward")
THRESHOLD = 0.5
MATMUL_KERNELS = frozenset({"_chunk_bmm_kernel", "_chunk_state_kernel", "_chunk_scan_kernel",
                            "_bwd_dx_kernel", "_bwd_dcb_kernel", "_bwd_dbc_kernel"})
ROUNDS, REPS = 3, 5


def classify(kernel_ms: dict[str, float]) -> tuple[float, float, list[str]]:
    """(matmul ms, other ms, names of the kernels counted as other) from a kernel timeline."""
    matmul = sum(ms for name, ms in kernel_ms.items() if name in MATMUL_KERNELS)
    others = sorted(name for name in kernel_ms if name not in MATMUL_KERNELS)
    return matmul, sum(kernel_ms[n] for n in others), others


def training_share(ctx: Context, ssd_fn: Any, args: tuple) -> dict[str, Any]:
    """The matmul kernels' share of a forward+backward step's device time, over ROUNDS rounds."""
    # the run's clock: validate loads this hook to re-judge and never the run (test_layers.py)
    from flopkb.verify.timing import kernel_timeline

    step, step_args = _training.step(ssd_fn, args, _training.all_floats(args),
                                     "forward+backward")
    shares, totals, others = [], [], []
    for _ in range(ROUNDS):
        ctx.tick()
        mm, other, names = classify(kernel_timeline(step, step_args, REPS))
        if mm + other <= 0:
            raise ExperimentError("the profiler recorded no CUDA kernels for the training step")
        shares.append(mm / (mm + other))
        totals.append((mm + other) / REPS)
        others = names
    shares.sort()
    totals.sort()
    return {"train_share": shares[len(shares) // 2], "train_share_low": shares[0],
            "train_share_high": shares[-1], "train_step_kernel_ms": totals[len(totals) // 2],
            "train_other_kernels": others}


def cpu_check(ctx: Context) -> None:
    import torch

    ssd_bench = ctx.load("ssd", "bench")
    k = ssd_bench.kernels()
    args = ssd_bench.ssd_inputs(1, 40, 2, 16, 16, dtype=torch.float32)
    run = k["chunked"].ssd_chunked_stages(*args, chunk_size=16)
    ctx.check("ssd.chunked.ssd_chunked_stages", run(), k["reference"].ssd_reference(*args))


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    ssd_bench = ctx.load("ssd", "bench")
    k = ssd_bench.kernels()
    chunk = int(cond["chunk_size"])
    steps, n0 = size_of(cond["seq_len"]), int(cond["state_dim"])
    matmul_stages = set(getattr(k["chunked"], "MATMUL_STAGES", ("chunk_state", "chunk_scan")))
    rows = []
    for dstate, guarded in ctx.sweep(claim_then(n0, (64, 256), ctx.quick), rows):
        with guarded:
            shape = ssd_bench.shape_of(cond, steps, dstate)
            args = ssd_bench.make(ctx, shape)
            run = k["chunked"].ssd_chunked_stages(*args, chunk_size=chunk)
            ssd_bench.check_against_reference(ctx, "ssd.chunked.ssd_chunked_stages", run(), args)
            times = {name: ctx.time(f"{name} N={dstate}", fn, [()], **shape)
                     for name, fn in run.stages.items()}
            mm = [t for n, t in times.items() if n in matmul_stages]
            other = [t for n, t in times.items() if n not in matmul_stages]
            mm_i, other_i = stats.sum_interval(mm), stats.sum_interval(other) if other else None
            o_val = other_i.value if other_i else 0.0
            o_lo = other_i.low if other_i else 0.0
            o_hi = other_i.high if other_i else 0.0
            share = Interval(mm_i.value / (mm_i.value + o_val), mm_i.low / (mm_i.low + o_hi),
                             mm_i.high / (mm_i.high + o_lo))
            f_total = ssd_bench.costs("chunked", shape, chunk)[0]
            f_pass = (shape["batch"] * shape["heads"] * 2 * (steps // chunk)
                      * shape["headdim"] * dstate)
            row = {"forward_share": share.value, "forward_share_low": share.low,
                   "forward_share_high": share.high}
            # every point in the claim's own pass, so the sweep reads as one quantity
            if cond["pass"] == "forward+backward":
                train = training_share(
                    ctx, lambda *a: k["chunked"].ssd_chunked(*a, chunk_size=chunk), args)
                row.update(train)
                row.update(share=train["train_share"], share_low=train["train_share_low"],
                           share_high=train["train_share_high"])
            else:
                row.update(share=share.value, share_low=share.low, share_high=share.high)
            rows.append(point_row(state_dim=dstate, seq_len=steps, flop_share=1 - f_pass / f_total,
                                  **row, **{f"{n}_ms": t.median_ms for n, t in times.items()}))
    label = ("share of a training step in matmul kernels" if cond["pass"] == "forward+backward"
             else "share of forward time in matmul stages")
    plot = {"kind": "stacked", "x": "state_dim", "xlabel": "state size N",
            "ylabel": "forward stage time (ms)", "measure_label": label,
            "series": {n: f"{n}_ms" for n in ("chunk_state", "state_passing", "chunk_scan")}}
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Experiment) -> Judgement:
    p = m.data["primary"]
    measured = Interval(p["share"], p["share_low"], p["share_high"])
    what = (f"share of a chunked-SSD training step's kernel time in matmul kernels (forward "
            f"only: {p['forward_share']:.2f})" if "train_share" in p
            else "share of chunked-SSD forward time in matmul stages")
    return Judgement(measured, "fraction", f"{what}, N={p['state_dim']}, T={p['seq_len']}",
                     stats.decide_above(measured, THRESHOLD, margin=0.0),
                     declaration.qualitative_criterion)
