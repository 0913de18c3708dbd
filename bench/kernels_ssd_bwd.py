"""Chunked SSD training step (forward, backward, forward+backward) beside mamba_ssm and fla.

    python bench/kernels_ssd_bwd.py --out bench/results/ssd_bwd_h200.json [--rounds 3]
        [--variants q256,q128] [--dstates 64,128] [--steps 2048,4096,16384]
    python bench/kernels_ssd_bwd.py --smoke --out /tmp/smoke.json     # CPU, TRITON_INTERPRET=1

Per shape (B*T = 32K tokens, H = 32, P = 64, G = 1, bf16 x/B/C, fp32 dt/A/D): build the inputs,
compute reference gradients by torch.autograd through `ssd_chunked_reference` (float32, the
chunked form in PyTorch ops; the CPU tests tie it to the step-by-step reference), then check every
implementation's output and gradients of x, dt, A, B, C, D against it (||g - ref|| / ||ref||,
bf16 bound): a wrong or failing implementation is recorded and not timed. Then time, in
`--rounds` interleaved rounds (every implementation once per round, so drifting clocks hit all
alike), three passes each: the autograd forward (inputs require grad, so what the backward needs
is saved), the backward alone (`torch.autograd.grad` on a kept graph) and forward+backward.
Each figure is the median of the per-round medians. On the GPU the cuBLAS bf16 and copy ceilings
are measured first (`bench.common.measure_ceilings`) and every timed row gets its fraction of the
roofline per pass (kernels/ssd/cost.py: useful FLOPs and fewest bytes, at the row's chunk).

Implementations: every entry of `chunked.VARIANTS` (ours), mamba_ssm's
`mamba_chunk_scan_combined` (autograd; package `__init__` bypassed as in verify's peers), and
fla's `chunk_simple_gla` (q = C, k = B broadcast to the heads, v = x dt, g = dt A, scale 1; no D
term). A peer that is absent or raises is recorded as not-run with the exception text (fla-core
0.6.0 refuses its backward on Triton 3.6 / Hopper). Writes JSON (machine fingerprint, command,
every timing) to --out after every shape, atomically.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    REQUIRED,
    comma_list,
    device_of,
    device_or_wall_ms,
    floor_ms,
    header,
    measure_ceilings,
    parser,
    unknown,
    write_json,
)

PASSES = ("fwd", "bwd", "fwd_bwd")
GRAD_NAMES = ("x", "dt", "A", "B", "C", "D")
# ||g - ref|| / ||ref|| bound for bf16 inputs (the CPU tests' bf16 gradient bound); --bound
# overrides it for a run, and the JSON records the bound each check used.
BF16_BOUND = 3e-2
# device time sampled per timed call on the GPU (bench/common.py's device_or_wall_ms)
BUDGET_MS = 300
FULL = {"tokens": 32 * 1024, "heads": 32, "headdim": 64, "groups": 1,
        "dstates": (64, 128), "steps": (2048, 4096, 16384)}
# Smoke (CPU interpreter): one tiny shape, fp32 so the interpreter's dots are exact.
SMOKE = {"tokens": 40, "heads": 2, "headdim": 16, "groups": 1, "dstates": (16,), "steps": (40,)}


def log(msg: str) -> None:
    print(msg, flush=True)


def rel_err(got: Any, ref: Any) -> float:
    import torch

    g, r = got.double(), ref.double()
    if not torch.isfinite(g).all():
        return math.inf
    return ((g - r).norm() / r.norm()).item()


def make_inputs(device: str, dtype: Any, batch: int, steps: int, heads: int, p: int,
                groups: int, n: int) -> list[Any]:
    """x, dt, A, B, C, D as Mamba-2 initialises them (dt log-uniform in [1e-3, 1e-1], A in
    [-16, -1]) plus D ~ N(0, 1) fp32."""
    import torch

    x = torch.randn(batch, steps, heads, p, device=device).to(dtype)
    dt = torch.exp(torch.rand(batch, steps, heads, device=device)
                   * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
    A = -torch.exp(torch.rand(heads, device=device) * math.log(16))
    Bm = torch.randn(batch, steps, groups, n, device=device).to(dtype)
    Cm = torch.randn(batch, steps, groups, n, device=device).to(dtype)
    D = torch.randn(heads, device=device)
    return [x, dt, A, Bm, Cm, D]


class Impl:
    """One implementation: `run(*leaves)` -> y, differentiable w.r.t. the leaves it is given."""

    def __init__(self, name: str, kind: str, run: Callable[..., Any], info: dict[str, Any],
                 leaves_of: Callable[[list[Any]], list[Any]] | None = None,
                 check_run: Callable[..., Any] | None = None) -> None:
        self.name, self.kind, self.run, self.info = name, kind, run, info
        # Timing leaves may differ from the SSD inputs (fla takes q, k, v, g): leaves_of builds
        # them once per input set, outside the timed region; check_run maps SSD leaves to y.
        self.leaves_of = leaves_of or (lambda args: args)
        self.check_run = check_run or run


def our_impls(chunked: Any, names: list[str]) -> list[Impl]:
    out = []
    for name in names:
        kw = chunked.VARIANTS[name]
        info = {"config": {k: (vars(v) if hasattr(v, "__dataclass_fields__") else v)
                           for k, v in kw.items()}}
        out.append(Impl(f"ours:{name}", "bundled",
                        lambda *a, _kw=kw: chunked.ssd_chunked_fn(*a, **_kw), info))
    return out


def _mamba_combined() -> Callable[..., Any]:
    """mamba_ssm's `mamba_chunk_scan_combined` through verify's peer loader (package `__init__`
    bypassed), wherever this checkout keeps it."""
    from flopkb.verify.peers.mamba_ssm import chunk_scan_combined

    return chunk_scan_combined()[0]


def fla_map(x: Any, dt: Any, A: Any, Bm: Any, Cm: Any) -> tuple[Any, Any, Any, Any]:
    """SSD inputs as fla's chunk_simple_gla's q, k, v, g (outside the timed region): q = C and
    k = B broadcast to the heads, v = x dt, g = dt A."""
    heads = x.shape[2]
    q = Cm.repeat_interleave(heads // Cm.shape[2], dim=2).contiguous()
    k = Bm.repeat_interleave(heads // Bm.shape[2], dim=2).contiguous()
    v = (x.float() * dt[..., None]).to(x.dtype)
    return q, k, v, (dt * A).contiguous()


def peer_impls(chunk: int) -> tuple[list[Impl], list[dict[str, Any]]]:
    """mamba_ssm and fla when importable; otherwise not-run rows with the reason."""
    from flopkb.verify import peers

    impls: list[Impl] = []
    not_run: list[dict[str, Any]] = []
    try:
        combined = _mamba_combined()
        version = peers.version("mamba_ssm")
        impls.append(Impl(
            f"mamba_ssm:chunk{chunk}", "peer",
            lambda x, dt, A, Bm, Cm, D, _c=combined: _c(x, dt, A, Bm, Cm, chunk, D=D),
            {"version": version, "chunk_size": chunk, "api": "mamba_chunk_scan_combined"},
        ))
    except Exception as exc:
        not_run.append({"name": f"mamba_ssm:chunk{chunk}", "kind": "peer",
                        "not_run": f"{type(exc).__name__}: {exc}"})
    try:
        from fla.ops.simple_gla import chunk_simple_gla

        version = peers.version("fla-core")

        def fla_leaves(args: list[Any]) -> list[Any]:
            return [t.requires_grad_() for t in fla_map(*(t.detach() for t in args[:5]))]

        def fla_run(q, k, v, g, _f=chunk_simple_gla):
            return _f(q, k, v, g=g, scale=1.0)[0]

        def fla_check(x, dt, A, Bm, Cm, D, _f=chunk_simple_gla):
            # The same map from SSD inputs, differentiable, plus the D x term fla lacks.
            heads = x.shape[2]
            q = Cm.repeat_interleave(heads // Cm.shape[2], dim=2)
            k = Bm.repeat_interleave(heads // Bm.shape[2], dim=2)
            v = (x.float() * dt[..., None]).to(x.dtype)
            y = _f(q, k, v, g=dt * A, scale=1.0)[0]
            return (y.float() + x.float() * D[None, None, :, None]).to(x.dtype)

        impls.append(Impl("fla:chunk_simple_gla", "peer", fla_run,
                          {"version": version, "map": "q=C, k=B (per head), v=x*dt, g=dt*A, "
                           "scale=1; timed without the D x term"},
                          leaves_of=fla_leaves, check_run=fla_check))
    except Exception as exc:
        not_run.append({"name": "fla:chunk_simple_gla", "kind": "peer",
                        "not_run": f"{type(exc).__name__}: {exc}"})
    return impls, not_run


def grads_of(run: Callable[..., Any], args: list[Any], dy: Any) -> tuple[Any, list[Any]]:
    import torch

    leaves = [t.detach().clone().requires_grad_() for t in args]
    y = run(*leaves)
    grads = torch.autograd.grad(y, leaves, dy)
    return y.detach(), list(grads)


def check(impl: Impl, args: list[Any], dy: Any, y_ref: Any, g_ref: list[Any],
          bound: float = BF16_BOUND) -> dict[str, Any]:
    """Output and gradient errors; a backward that raises leaves a forward-only check with the
    exception text in `bwd_not_run` (so its forward can still be timed)."""
    import torch

    try:
        y, grads = grads_of(impl.check_run, args, dy)
    except Exception as exc:
        with torch.no_grad():
            y = impl.check_run(*args)
        err = rel_err(y, y_ref)
        return {"rel_err": {"y": err}, "bound": bound, "correct": err <= bound,
                "bwd_not_run": f"{type(exc).__name__}: {exc}"}
    errs = {"y": rel_err(y, y_ref)} | {
        f"d{n}": rel_err(g, r) for n, g, r in zip(GRAD_NAMES, grads, g_ref, strict=True)
    }
    return {"rel_err": errs, "bound": bound, "correct": all(e <= bound for e in errs.values())}


def pass_callables(impl: Impl, leaves: list[Any], dy: Any,
                   fwd_only: bool = False) -> dict[str, Callable[[], Any]]:
    import torch

    def fwd() -> Any:
        return impl.run(*leaves)

    if fwd_only:
        return {"fwd": fwd}
    kept = impl.run(*leaves)

    def bwd() -> Any:
        return torch.autograd.grad(kept, leaves, dy, retain_graph=True)

    def fwd_bwd() -> Any:
        return torch.autograd.grad(impl.run(*leaves), leaves, dy)

    return {"fwd": fwd, "bwd": bwd, "fwd_bwd": fwd_bwd}


def bench_shape(shape: dict[str, Any], impls: list[Impl], not_run: list[dict[str, Any]],
                args_rounds: int, reps: int, device: str, dtype: Any, cost: Any,
                reference: Any, ceil: dict[str, Any] | None = None,
                bound: float = BF16_BOUND) -> dict[str, Any]:
    import torch

    b, t, h, p, g, n = (shape[k] for k in ("B", "T", "H", "P", "G", "N"))
    args = make_inputs(device, dtype, b, t, h, p, g, n)
    dy = torch.randn_like(args[0])
    chunk_ref = 64
    leaves = [a.detach().float().requires_grad_() for a in args]
    y_ref = reference.ssd_chunked_reference(*leaves, chunk_size=chunk_ref)
    g_ref = list(torch.autograd.grad(y_ref, leaves, dy.float()))
    y_ref = y_ref.detach()
    del leaves
    rows: dict[str, dict[str, Any]] = {r["name"]: dict(r) for r in not_run}
    live: list[tuple[Impl, dict[str, Callable[[], Any]]]] = []
    for impl in impls:
        row = {"name": impl.name, "kind": impl.kind, **impl.info}
        rows[impl.name] = row
        try:
            row["check"] = check(impl, args, dy, y_ref, g_ref, bound)
            if not row["check"]["correct"]:
                row["not_run"] = "gradient check failed: " + json.dumps(row["check"]["rel_err"])
                log(f"  {impl.name}: WRONG {row['check']['rel_err']}")
                continue
            tleaves = impl.leaves_of([a.detach().clone().requires_grad_() for a in args])
            fwd_only = "bwd_not_run" in row["check"]
            if fwd_only:
                row["not_run_passes"] = {"bwd": row["check"]["bwd_not_run"],
                                         "fwd_bwd": row["check"]["bwd_not_run"]}
                log(f"  {impl.name}: backward not run: {row['check']['bwd_not_run'][:300]}")
            calls = pass_callables(impl, tleaves, dy, fwd_only)
            live.append((impl, calls))
            row["timing"] = {ps: {"rounds": []} for ps in calls}
        except Exception as exc:  # a failing implementation is recorded, the run goes on
            row["not_run"] = f"{type(exc).__name__}: {exc}"
            log(f"  {impl.name}: not run: {row['not_run'][:300]}")
            traceback.print_exc(limit=2)
    on_gpu = device == "cuda"
    for rnd in range(args_rounds):
        for impl, calls in live:
            row = rows[impl.name]
            if "not_run" in row:
                continue
            for ps in calls:
                try:
                    timing = device_or_wall_ms(calls[ps], on_gpu, reps, BUDGET_MS)
                    row["timing"][ps]["rounds"].append(timing)
                except Exception as exc:
                    row["not_run"] = f"round {rnd} {ps}: {type(exc).__name__}: {exc}"
                    log(f"  {impl.name}: failed while timing: {row['not_run'][:300]}")
                    break
    for row in rows.values():
        if "not_run" in row or "timing" not in row:
            row.pop("timing", None)
            continue
        for ps in row["timing"]:
            meds = [r["median_ms"] for r in row["timing"][ps]["rounds"]]
            row["timing"][ps]["median_ms"] = statistics.median(meds)
        log(f"  {row['name']}: " + ", ".join(
            f"{ps} {row['timing'][ps]['median_ms']:.3f} ms" for ps in row["timing"]))
    # Useful work at the row's chunk; peers without one (fla) at 256.
    chunk_of = {r["name"]: r.get("config", {}).get("chunk_size") or r.get("chunk_size") or 256
                for r in rows.values()}
    out = {"shape": shape, "rows": list(rows.values()), "reference": {
        "impl": "ssd_chunked_reference (float32, chunk 64) through torch.autograd"}}
    out["cost"] = {name: cost_entry(cost, shape, q) for name, q in chunk_of.items()}
    if ceil is not None:
        for row in rows.values():
            if "timing" in row:
                row["roofline"] = roofline(out["cost"][row["name"]], row["timing"], ceil)
    out["ratios"] = ratios(rows)
    return out


def cost_entry(cost: Any, shape: dict[str, Any], chunk: int) -> dict[str, int]:
    dims = (shape["B"], shape["T"], shape["H"], shape["P"], shape["N"])
    x_bytes = 4 if shape["dtype"] == "float32" else 2
    return {
        "flops_fwd": cost.flops("chunked", *dims, chunk, has_d=True),
        "flops_bwd": cost.backward_flops(*dims, chunk, groups=shape["G"], has_d=True),
        "bytes_fwd": cost.bytes_moved(*dims, groups=shape["G"], x_bytes=x_bytes,
                                      bc_bytes=x_bytes, has_d=True),
        "bytes_bwd": cost.backward_bytes(*dims, chunk, groups=shape["G"], x_bytes=x_bytes,
                                         bc_bytes=x_bytes, has_d=True),
        "saved_bytes": cost.saved_bytes(*dims, chunk, groups=shape["G"], x_bytes=x_bytes),
    }


def roofline(costs: dict[str, int], timing: dict[str, Any], ceil: dict[str, Any]) -> dict:
    """Per pass: the floor max(FLOPs / matmul peak, bytes / copy bandwidth) over the median."""
    per_pass = {
        "fwd": (costs["flops_fwd"], costs["bytes_fwd"]),
        "bwd": (costs["flops_bwd"], costs["bytes_bwd"]),
        "fwd_bwd": (costs["flops_fwd"] + costs["flops_bwd"],
                    costs["bytes_fwd"] + costs["bytes_bwd"]),
    }
    out = {}
    for ps, t in timing.items():
        flops, nbytes = per_pass[ps]
        floor = floor_ms(flops, nbytes, ceil)
        out[ps] = {"floor_ms": floor, "frac_roofline": floor / t["median_ms"],
                   "tflops": flops / (t["median_ms"] * 1e-3) / 1e12}
    return out


def ratios(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Best of ours over each peer, per pass (None where either side did not run)."""
    out: dict[str, Any] = {}
    for ps in PASSES:
        timed = [r for r in rows.values() if ps in r.get("timing", {})]
        ours = [r for r in timed if r["kind"] == "bundled"]
        best = min(ours, key=lambda r: r["timing"][ps]["median_ms"], default=None)
        entry: dict[str, Any] = {"best_ours": best["name"] if best else None}
        for peer in ("mamba_ssm", "fla"):
            rs = [r for r in timed if r["name"].startswith(peer)]
            entry[f"ours_over_{peer}"] = (
                best["timing"][ps]["median_ms"] / rs[0]["timing"][ps]["median_ms"]
                if best and rs else None
            )
        out[ps] = entry
    return out


class Run:
    """One run of an SSD bench (this one or kernels_ssd_fwd.py) over state sizes x lengths: its
    device, sizes (`--smoke`'s or the full ones) and, once `start`ed, its dtype, ceilings and
    results. (A plain class: scripts load each other by path, where a dataclass cannot.)"""

    def __init__(self, args: argparse.Namespace, device: str, sizes: dict[str, Any]) -> None:
        self.args, self.device, self.sizes = args, device, sizes
        self.on_gpu = device == "cuda"
        self.dtype: Any = None
        self.ceilings: dict[str, Any] | None = None
        self.results: dict[str, Any] = {}
        self.started = 0.0

    def start(self, impls: list[Any], not_run: Any, /, **own: Any) -> None:
        """The results' header (the machine, the command, the options and `own`), then the
        ceilings: the roofline needs measured ones, so only on the GPU (the smoke run has none)."""
        import torch

        from flopkb.verify.machine import fingerprint

        self.results = {"machine": fingerprint(), **header(), "smoke": self.args.smoke,
                        "rounds": self.args.rounds, "reps": self.args.reps, **own, "shapes": []}
        log(f"implementations: {[i.name for i in impls]}; not run: {not_run}")
        self.started = time.time()
        self.ceilings = measure_ceilings(quick=True) if self.on_gpu else None
        self.results["ceilings"] = self.ceilings
        self.dtype = torch.float32 if self.args.smoke else torch.bfloat16

    def sweep(self, bench_one: Callable[[int, int], dict[str, Any]]) -> None:
        """`bench_one(N, T)` at every state size and length (`--dstates`, `--steps`), each
        appended to results["shapes"]; `--out` is rewritten after every shape (atomically), so a
        run cut short keeps the shapes done."""
        import torch

        for n in comma_list(self.args.dstates, int, self.sizes["dstates"]):
            for steps in comma_list(self.args.steps, int, self.sizes["steps"]):
                self.results["shapes"].append(bench_one(n, steps))
                self.results["wall_s"] = time.time() - self.started
                write_json(self.args.out, self.results)
                if self.on_gpu:
                    torch.cuda.empty_cache()
        write_json(self.args.out, self.results)


def open_run(args: argparse.Namespace, script: str, full: dict[str, Any],
             smoke: dict[str, Any]) -> Run | None:
    """The run's device, found before the first triton import (the fingerprint imports it);
    None, after one line on stderr, without one."""
    device = device_of(args, script)
    return None if device is None else Run(args, device, smoke if args.smoke else full)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, out=REQUIRED, rounds=3, reps=20, smoke=True)
    ap.add_argument("--variants", default="", help="comma list of VARIANTS names (default all)")
    ap.add_argument("--dstates", default="", help="comma list of N (default 64,128)")
    ap.add_argument("--steps", default="", help="comma list of T (default 2048,4096,16384)")
    ap.add_argument("--mamba-chunk", type=int, default=256)
    ap.add_argument("--bound", type=float, default=BF16_BOUND,
                    help="largest ||g - ref|| / ||ref|| a timed implementation may show")
    run = open_run(ap.parse_args(argv), "kernels_ssd_bwd.py", FULL, SMOKE)
    if run is None:
        return 2
    args = run.args
    from flopkb.kernelpkg import load_op

    chunked = load_op("ssd", "chunked")
    cost = load_op("ssd", "cost")
    reference = load_op("ssd", "reference")
    names = comma_list(args.variants, str, chunked.VARIANTS)
    error = unknown(names, chunked.VARIANTS, "variants")
    if error:
        print(error, file=sys.stderr)
        return 2
    impls = our_impls(chunked, names)
    peers, not_run = peer_impls(args.mamba_chunk)
    impls += peers
    run.start(impls, not_run, variants={n: chunked.VARIANTS[n] for n in names})
    sizes = run.sizes

    def bench_one(n: int, steps: int) -> dict[str, Any]:
        batch = max(1, sizes["tokens"] // steps)
        shape = {"B": batch, "T": steps, "H": sizes["heads"], "P": sizes["headdim"],
                 "G": sizes["groups"], "N": n, "dtype": str(run.dtype).removeprefix("torch."),
                 "dt_dtype": "float32", "D": True}
        log(f"SSD B={batch} T={steps} H={shape['H']} P={shape['P']} N={n} {shape['dtype']}")
        return bench_shape(shape, impls, not_run, args.rounds, args.reps, run.device, run.dtype,
                           cost, reference, run.ceilings, args.bound)

    run.sweep(bench_one)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
