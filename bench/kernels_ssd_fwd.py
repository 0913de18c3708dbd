"""Chunked SSD forward, stage by stage and per tiling, beside fla's chunk_simple_gla.

    python bench/kernels_ssd_fwd.py --out bench/results/ssd_fwd_h200.json [--rounds 3]
        [--dstates 64,128] [--steps 2048,4096,16384] [--configs q256,q128,...]
    python bench/kernels_ssd_fwd.py --smoke --out /tmp/smoke.json     # CPU, TRITON_INTERPRET=1

Per shape (B*T = 32K tokens, H = 32, P = 64, G = 1, bf16 x/B/C, fp32 dt/A/D) every implementation
is first checked against `ssd_chunked_reference` (float32) and then timed in `--rounds`
interleaved rounds (fresh inputs each round; every implementation once per round), medians of the
per-round medians. The D x term is handled equally on both sides, two ways:

- `nod`: neither side computes it (ours with Dskip=None; fla has no D term);
- `d`: both compute it (ours fuses it into chunk_scan; fla's output gets `y + x * D` as one
  PyTorch op inside the timed region).

Passes: `infer` (no grad: what serving runs) and `train` (inputs require grad, so what the
backward needs is saved; fla, like ours, keeps its forward's buffers). Stages: ours through
`ChunkedRun.stages` timed one by one, and, for both sides alike, every GPU kernel's time from
torch.profiler over the same calls (name -> mean us per forward), so the per-stage table compares
like with like. `--configs` sweeps our forward tiling (chunk, block_m, warps, pipeline stages);
each stage's best tiling is reported beside the best single tiling. Writes JSON (machine
fingerprint, command, every timing) to --out after every shape, atomically.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    REQUIRED,
    comma_list,
    device_or_wall_ms,
    floor_ms,
    parser,
    sibling,
    unknown,
)

BF16_BOUND = 3e-2
# device time sampled per timed call on the GPU (bench/common.py's device_or_wall_ms)
BUDGET_MS = 200
FULL = {"tokens": 32 * 1024, "heads": 32, "headdim": 64, "groups": 1,
        "dstates": (64, 128), "steps": (2048, 4096, 16384)}
SMOKE = {"tokens": 64, "heads": 2, "headdim": 16, "groups": 1, "dstates": (16,), "steps": (64,)}
# Forward tilings: name -> (chunk, block_m, num_warps, num_stages). q256 is the shipped default.
CONFIGS: dict[str, tuple[int, int, int, int]] = {
    "q256": (256, 64, 4, 2),
    "q256_s3": (256, 64, 4, 3),
    "q256_bm128_w8": (256, 128, 8, 2),
    "q256_w8": (256, 64, 8, 2),
    "q128": (128, 64, 4, 2),
    "q128_s3": (128, 64, 4, 3),
    "q128_bm128_w8": (128, 128, 8, 2),
    "q128_bm32": (128, 32, 4, 2),
    "q64": (64, 64, 4, 2),
    "q64_s3": (64, 64, 4, 3),
}
SMOKE_CONFIGS = ("q64", "q128_bm32")


# the training-step bench's helpers: the same logging, error norm, map of the SSD inputs to
# fla's and sweep over the shapes
_BWD = sibling("kernels_ssd_bwd")
log, rel_err, fla_map, open_run = _BWD.log, _BWD.rel_err, _BWD.fla_map, _BWD.open_run


class Impl:
    """One forward: `make(args, with_d, train)` -> zero-argument callable returning y."""

    def __init__(self, name: str, kind: str, make: Callable[..., Callable[[], Any]],
                 info: dict[str, Any]) -> None:
        self.name, self.kind, self.make, self.info = name, kind, make, info


def ours(chunked: Any, name: str, cfg: tuple[int, int, int, int]) -> Impl:
    chunk, bm, warps, stages = cfg

    def make(args: list[Any], with_d: bool, train: bool) -> Callable[[], Any]:
        x, dt, A, Bm, Cm, D = args
        d = D if with_d else None
        kw = {"block_m": bm, "num_warps": warps, "num_stages": stages}
        if train:
            leaves = [t.detach().clone().requires_grad_() for t in (x, dt, A, Bm, Cm)]
            dl = d.detach().clone().requires_grad_() if d is not None else None
            return lambda: chunked.ssd_chunked_fn(*leaves, dl, chunk, **kw)
        return lambda: chunked.ssd_chunked(x, dt, A, Bm, Cm, d, chunk, **kw)

    return Impl(f"ours:{name}", "bundled", make,
                {"chunk_size": chunk, "block_m": bm, "num_warps": warps, "num_stages": stages})


def fla_impl() -> tuple[Impl | None, str | None]:
    from flopkb.verify import peers

    try:
        from fla.ops.simple_gla import chunk_simple_gla
    except Exception as exc:  # absent or broken peer: recorded, not timed
        return None, f"{type(exc).__name__}: {exc}"
    version = peers.version("fla-core")

    def make(args: list[Any], with_d: bool, train: bool) -> Callable[[], Any]:
        import torch

        x, dt, A, Bm, Cm, D = args
        mapped = fla_map(x, dt, A, Bm, Cm)
        if train:
            mapped = tuple(t.detach().clone().requires_grad_() for t in mapped)
        q, k, v, g = mapped
        d4 = D[None, None, :, None]

        def run() -> Any:
            y = chunk_simple_gla(q, k, v, g=g, scale=1.0)[0]
            if with_d:
                # the D x term as one PyTorch op: fla has none of its own
                y = torch.addcmul(y, x, d4.to(x.dtype))
            return y

        return run

    return Impl("fla:chunk_simple_gla", "peer", make,
                {"version": version, "chunk_size": 64,
                 "map": "q=C, k=B (per head), v=x*dt, g=dt*A, scale=1 (mapped outside the timed "
                        "region); D: y + x*D by torch.addcmul inside it"}), None


def mamba_impl() -> tuple[Impl | None, str | None]:
    from flopkb.verify import peers

    try:
        from flopkb.verify.peers.mamba_ssm import chunk_scan_combined

        combined = chunk_scan_combined()[0]
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    version = peers.version("mamba_ssm")

    def make(args: list[Any], with_d: bool, train: bool) -> Callable[[], Any]:
        x, dt, A, Bm, Cm, D = args
        if train:
            x, dt, A, Bm, Cm, D = (t.detach().clone().requires_grad_() for t in args)
        d = D if with_d else None
        return lambda: combined(x, dt, A, Bm, Cm, 256, D=d)

    return Impl("mamba_ssm:chunk256", "peer", make,
                {"version": version, "api": "mamba_chunk_scan_combined", "chunk_size": 256}), None


def kernel_times(fn: Callable[[], Any], calls: int) -> dict[str, float]:
    """GPU kernel name -> mean microseconds per call of `fn`, from torch.profiler."""
    from flopkb.verify.timing import kernel_timeline

    out: dict[str, float] = {}
    for name, ms in kernel_timeline(fn, (), calls).items():
        out[name[:120]] = out.get(name[:120], 0.0) + ms * 1e3 / calls
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def make_inputs(device: str, dtype: Any, shape: dict[str, Any], seed: int) -> list[Any]:
    import torch

    torch.manual_seed(seed)
    return _BWD.make_inputs(
        device, dtype, shape["B"], shape["T"], shape["H"], shape["P"], shape["G"], shape["N"])


def bench_shape(shape: dict[str, Any], impls: list[Impl], rounds: int, reps: int, device: str,
                dtype: Any, on_gpu: bool, chunked: Any, reference: Any, cost: Any,
                ceil: dict[str, Any] | None) -> dict[str, Any]:
    import torch

    args = make_inputs(device, dtype, shape, seed=0)
    with torch.no_grad():
        ref_d = reference.ssd_chunked_reference(*(a.float() for a in args), chunk_size=64)
        ref_nod = reference.ssd_chunked_reference(*(a.float() for a in args[:5]), None,
                                                  chunk_size=64)
    rows: dict[str, dict[str, Any]] = {}
    timed: list[Impl] = []
    for impl in impls:
        row = {"name": impl.name, "kind": impl.kind, "info": impl.info}
        try:
            with torch.no_grad():
                errs = {"d": rel_err(impl.make(args, True, False)(), ref_d),
                        "nod": rel_err(impl.make(args, False, False)(), ref_nod)}
            row["check"] = {"rel_err": errs, "bound": BF16_BOUND,
                            "correct": all(e <= BF16_BOUND for e in errs.values())}
            if row["check"]["correct"]:
                timed.append(impl)
        except Exception as exc:
            row["not_run"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        rows[impl.name] = row
    keys = [(ps, dv) for ps in ("infer", "train") for dv in ("nod", "d")]
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {
        i.name: {f"{ps}_{dv}": [] for ps, dv in keys} for i in timed}
    stage_samples: dict[str, dict[str, list[float]]] = {}
    for r in range(rounds):
        args = make_inputs(device, dtype, shape, seed=1 + r)
        for impl in timed:
            for ps, dv in keys:
                fn = impl.make(args, dv == "d", ps == "train")
                ctx = torch.enable_grad() if ps == "train" else torch.no_grad()
                with ctx:
                    timing = device_or_wall_ms(fn, on_gpu, reps, BUDGET_MS)
                    samples[impl.name][f"{ps}_{dv}"].append(timing)
            if impl.kind == "bundled":
                chunk = impl.info["chunk_size"]
                run = chunked.ssd_chunked_stages(
                    *args, chunk_size=chunk, block_m=impl.info["block_m"],
                    num_warps=impl.info["num_warps"], num_stages=impl.info["num_stages"])
                run()
                per = stage_samples.setdefault(impl.name, {})
                for stage, launch in run.stages.items():
                    per.setdefault(stage, []).append(
                        device_or_wall_ms(launch, on_gpu, reps, BUDGET_MS)["median_ms"])
    for impl in timed:
        row = rows[impl.name]
        row["timing"] = {k: {"rounds": v, "median_ms": statistics.median(
            s["median_ms"] for s in v)} for k, v in samples[impl.name].items()}
        if impl.name in stage_samples:
            row["stages_ms"] = {st: statistics.median(v)
                                for st, v in stage_samples[impl.name].items()}
        if on_gpu:
            with torch.no_grad():
                row["kernels_us"] = {dv: kernel_times(impl.make(args, dv == "d", False), 10)
                                     for dv in ("nod", "d")}
        if ceil and impl.kind == "bundled":
            dims = (shape["B"], shape["T"], shape["H"], shape["P"], shape["N"])
            flops = cost.flops("chunked", *dims, impl.info["chunk_size"], has_d=True)
            nbytes = cost.bytes_moved(*dims, groups=shape["G"], x_bytes=2, bc_bytes=2,
                                      has_d=True)
            row["floor_ms_infer_d"] = floor_ms(flops, nbytes, ceil)
    return {"shape": shape, "rows": list(rows.values()), "summary": summarize_shape(rows)}


def summarize_shape(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per pass and D handling: the best of ours (one tiling for all stages) over each peer, and
    the sum of each stage's best tiling (what per-stage tiling could give, measured stage alone)."""
    out: dict[str, Any] = {}
    ours_rows = [r for r in rows.values() if r["kind"] == "bundled" and "timing" in r]
    for key in ("infer_nod", "infer_d", "train_nod", "train_d"):
        best = min(ours_rows, key=lambda r: r["timing"][key]["median_ms"], default=None)
        entry: dict[str, Any] = {"best_ours": best["name"] if best else None,
                                 "best_ours_ms": best["timing"][key]["median_ms"] if best else None}
        for peer in ("fla", "mamba_ssm"):
            p = next((r for r in rows.values() if r["name"].startswith(peer) and "timing" in r),
                     None)
            entry[f"{peer}_ms"] = p["timing"][key]["median_ms"] if p else None
            entry[f"ours_over_{peer}"] = (best["timing"][key]["median_ms"]
                                          / p["timing"][key]["median_ms"] if best and p else None)
        out[key] = entry
    staged = [r for r in ours_rows if "stages_ms" in r]
    if staged:
        stages = list(staged[0]["stages_ms"])
        per_stage = {}
        for st in stages:
            best = min(staged, key=lambda r: r["stages_ms"][st])
            per_stage[st] = {"best": best["name"], "ms": best["stages_ms"][st]}
        out["best_tiling_per_stage"] = per_stage
        out["best_tiling_per_stage_sum_ms"] = sum(v["ms"] for v in per_stage.values())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, out=REQUIRED, rounds=3, reps=20, smoke=True)
    ap.add_argument("--configs", default="", help="comma list of CONFIGS names (default all)")
    ap.add_argument("--dstates", default="", help="comma list of N")
    ap.add_argument("--steps", default="", help="comma list of T")
    run = open_run(ap.parse_args(argv), "kernels_ssd_fwd.py", FULL, SMOKE)
    if run is None:
        return 2
    args = run.args
    from flopkb.kernelpkg import load_op

    names = comma_list(args.configs, str, SMOKE_CONFIGS if args.smoke else CONFIGS)
    error = unknown(names, CONFIGS, "configs")
    if error:
        print(error, file=sys.stderr)
        return 2
    chunked = load_op("ssd", "chunked")
    impls = [ours(chunked, n, CONFIGS[n]) for n in names]
    not_run = {}
    for maker in (fla_impl, mamba_impl):
        impl, why = maker()
        if impl is None:
            not_run[maker.__name__.removesuffix("_impl")] = why
        else:
            impls.append(impl)
    run.start(impls, not_run, configs={n: CONFIGS[n] for n in names}, not_run=not_run)
    sizes = run.sizes

    def bench_one(n: int, steps: int) -> dict[str, Any]:
        shape = {"B": max(1, sizes["tokens"] // steps), "T": steps, "H": sizes["heads"],
                 "P": sizes["headdim"], "G": sizes["groups"], "N": n,
                 "dtype": str(run.dtype).removeprefix("torch.")}
        log(f"SSD fwd B={shape['B']} T={steps} N={n}")
        done = bench_shape(shape, impls, args.rounds, args.reps, run.device, run.dtype,
                           run.on_gpu, chunked, load_op("ssd", "reference"),
                           load_op("ssd", "cost"), run.ceilings)
        log(json.dumps(done["summary"], default=str)[:1500])
        return done

    run.sweep(bench_one)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
