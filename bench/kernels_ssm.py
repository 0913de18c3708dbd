"""Benchmark the bundled state-space-model kernels on a GPU, side by side with their peers.

    python bench/kernels_ssm.py [--sections ss,ssd] [--out PATH] [--quick]

Order of work, all in one run: measure the ceilings (cuBLAS bf16 8192^3 matmul, device-to-device
copy counting read + write), then per op and shape build the inputs, compute the PyTorch reference,
run every variant and peer on those inputs with a NaN-filled output and check it against the
reference (a wrong or failing kernel gets no speed figure), then time with
`flopkb.verify.timing.time_cuda` rotating over two input sets. Prints a table and writes JSON
(machine fingerprint, command line, shapes, every timing, peer figures, fraction of roofline) to
$OUT/ssm_h200.json when $OUT is set and to --out when given.

Peers (measurement only, never committed): fla-core's `chunk_simple_gla` and
`fused_recurrent_simple_gla`, mamba_ssm's Triton `mamba_chunk_scan_combined` (its package
`__init__` is bypassed, since it imports CUDA extensions that are not built). Mamba's CUDA
selective-scan kernel cannot be built on the device image; its H200 times (2.05 ms at N=16,
7.5 ms at N=64, quoted in issue 4) are carried as an external reference only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flopkb.kernelpkg import load_op  # noqa: E402
from flopkb.verify.machine import fingerprint  # noqa: E402
from flopkb.verify.timing import time_cuda  # noqa: E402

# ||out - ref|| / ||ref|| bounds for 16-bit inputs against the float32 reference on the same inputs.
REL_BOUND = {"selective_scan": 1e-2, "ssd": 2e-2}
# H100/H200 SXM datasheet: 67 TFLOP/s fp32 on the CUDA cores (no tensor cores); the scan
# schedules can use nothing faster, so their fraction is also quoted against it.
FP32_SIMT_TFLOPS = 67.0
# Mamba's CUDA selective-scan forward on an H200, as quoted in issue 4 (not measurable here).
MAMBA_CUDA_SS_MS = {16: 2.05, 64: 7.5}

# Problem sizes from issue 4 (module constants so a CPU smoke test can shrink them).
DEVICE = "cuda"
SS_SHAPE = {"batch": 8, "dim": 4096, "steps": 4096, "dstates": (16, 64)}
SSD_SHAPE = {"heads": 32, "headdim": 64, "dstate": 128, "groups": 1, "tokens": 32 * 1024,
             "steps": (2048, 4096, 16384)}
RESULTS: dict[str, Any] = {}
# Rows so far and where the JSON goes: written after every row so a run cut short keeps its data.
PARTIAL: list[dict[str, Any]] = []
OUT_PATHS: list[Path] = []


def flush() -> None:
    RESULTS.setdefault("rows", PARTIAL)
    for path in OUT_PATHS:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(RESULTS, indent=1, default=str))
        tmp.replace(path)


def log(msg: str) -> None:
    print(msg, flush=True)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    o, r = out.float(), ref.float()
    if not torch.isfinite(o).all():
        return math.inf
    return ((o - r).norm() / r.norm()).item()


def measure_ceilings(quick: bool) -> dict[str, float]:
    """Measured bf16 cuBLAS matmul TFLOP/s (8192^3, random data) and copy GB/s (read + write)."""
    n = 8192
    mats = [(torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16),
             torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16)) for _ in range(2)]
    t_mm = time_cuda(torch.matmul, mats, warmup=3, reps=10 if quick else 30)
    del mats
    numel = 1 << 29  # 1 GiB of bf16 per buffer: far past the 60 MB L2
    src = torch.randn(numel, device=DEVICE, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t_cp = time_cuda(lambda a, b: b.copy_(a), [(src, dst)], warmup=3, reps=10 if quick else 30)
    del src, dst
    torch.cuda.empty_cache()
    return {
        "bf16_matmul_tflops": 2 * n**3 / (t_mm.median_ms * 1e-3) / 1e12,
        "copy_gbps": 2 * numel * 2 / (t_cp.median_ms * 1e-3) / 1e9,
        "matmul_timing": t_mm.as_dict(),
        "copy_timing": t_cp.as_dict(),
    }


def roofline(flops: int, nbytes: int, ms: float, ceil: dict[str, float]) -> dict[str, float]:
    floor_tc = max(flops / (ceil["bf16_matmul_tflops"] * 1e12), nbytes / (ceil["copy_gbps"] * 1e9))
    floor_simt = max(flops / (FP32_SIMT_TFLOPS * 1e12), nbytes / (ceil["copy_gbps"] * 1e9))
    return {
        "tflops": flops / (ms * 1e-3) / 1e12,
        "gbps": nbytes / (ms * 1e-3) / 1e9,
        "floor_ms": floor_tc * 1e3,
        "frac_roofline": floor_tc * 1e3 / ms,
        "floor_simt_ms": floor_simt * 1e3,
        "frac_roofline_simt": floor_simt * 1e3 / ms,
    }


def run_variant(
    table: list[dict[str, Any]], name: str, fn, arg_sets, ref: torch.Tensor, bound: float,
    flops: int, nbytes: int, ceil: dict[str, float], extra: dict[str, Any] | None = None,
    out_of=None, budget_ms: float = 300.0,
) -> dict[str, Any]:
    """Check `fn(*arg_sets[0])` against `ref`, then time it. `out_of(result)` picks y."""
    row: dict[str, Any] = {"name": name, **(extra or {})}
    try:
        res = fn(*arg_sets[0], nan_out=True)
        torch.cuda.synchronize()
        y = out_of(res) if out_of else (res[0] if isinstance(res, tuple) else res)
        err = rel_err(y, ref)
        row.update(rel_err=err, bound=bound, correct=err <= bound)
        if not row["correct"]:
            log(f"  {name}: WRONG rel_err={err:.3e} > {bound}")
        else:
            t = time_cuda(lambda *a: fn(*a, nan_out=False), arg_sets, warmup=3, reps=30,
                          budget_ms=budget_ms)
            row["timing"] = t.as_dict()
            row["ms"] = t.median_ms
            row.update(roofline(flops, nbytes, t.median_ms, ceil))
            row["flops"], row["bytes"] = flops, nbytes
            log(f"  {name}: {t.median_ms:.3f} ms (p10 {t.p10_ms:.3f} p90 {t.p90_ms:.3f}) "
                f"err {err:.1e} frac {row['frac_roofline']:.3f}")
    except Exception as exc:  # a failing variant is recorded, the run goes on
        row.update(error=f"{type(exc).__name__}: {exc}", correct=False)
        log(f"  {name}: ERROR {type(exc).__name__}: {str(exc)[:300]}")
        traceback.print_exc(limit=3)
    add_row(table, row)
    return row


def add_row(table: list[dict[str, Any]], row: dict[str, Any]) -> None:
    table.append(row)
    PARTIAL.append(row)
    flush()


def _nan_like(t: torch.Tensor) -> torch.Tensor:
    return torch.full_like(t, float("nan"))


def make_ss_inputs(batch: int, dim: int, steps: int, dstate: int) -> tuple:
    """Selective-scan inputs in Mamba's layout: bf16 activations, fp32 A, D, delta_bias."""
    u = torch.randn(batch, dim, steps, device=DEVICE, dtype=torch.bfloat16)
    delta = (torch.randn(batch, dim, steps, device=DEVICE) * 0.5 - 2).to(torch.bfloat16)
    A = -torch.exp(torch.rand(dim, dstate, device=DEVICE) * math.log(16))
    Bm = torch.randn(batch, dstate, steps, device=DEVICE, dtype=torch.bfloat16)
    Cm = torch.randn(batch, dstate, steps, device=DEVICE, dtype=torch.bfloat16)
    Dsk = torch.randn(dim, device=DEVICE)
    bias = torch.randn(dim, device=DEVICE) * 0.1
    return u, delta, A, Bm, Cm, Dsk, bias


def make_ssd_inputs(batch: int, steps: int, heads: int, p: int, groups: int, n: int) -> tuple:
    """SSD inputs: bf16 x, B, C; fp32 dt log-uniform in [1e-3, 1e-1]; A in [-16, -1]."""
    x = torch.randn(batch, steps, heads, p, device=DEVICE, dtype=torch.bfloat16)
    dt = torch.exp(torch.rand(batch, steps, heads, device=DEVICE)
                   * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
    A = -torch.exp(torch.rand(heads, device=DEVICE) * math.log(16))
    Bm = torch.randn(batch, steps, groups, n, device=DEVICE, dtype=torch.bfloat16)
    Cm = torch.randn(batch, steps, groups, n, device=DEVICE, dtype=torch.bfloat16)
    return x, dt, A, Bm, Cm


def bench_ours(
    table: list[dict[str, Any]], kind: str, f, cfg: dict[str, Any], fl: int, sets, ref,
    nb: int, ceil: dict[str, float], common: dict[str, Any], extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Check and time one bundled SSD schedule `f` with keyword config `cfg`."""

    def fn(x, dt, A, Bm, Cm, nan_out):
        return f(x, dt, A, Bm, Cm, **cfg, out=_nan_like(x) if nan_out else None)

    name = f"ssd_{kind}_" + "_".join(f"{k}{v}" for k, v in cfg.items())
    return run_variant(table, name, fn, sets, ref, REL_BOUND["ssd"], fl, nb, ceil,
                       extra={**common, "impl": "bundled", "schedule": kind, "config": cfg,
                              **(extra or {})})


# ----------------------------------------------------------------------------- selective scan


def bench_selective_scan(ceil: dict[str, float], quick: bool) -> list[dict[str, Any]]:
    ss = load_op("selective_scan", "scan").selective_scan
    ref_fn = load_op("selective_scan", "reference").selective_scan_reference
    cost = load_op("selective_scan", "cost")
    batch, dim, steps = SS_SHAPE["batch"], SS_SHAPE["dim"], SS_SHAPE["steps"]
    table: list[dict[str, Any]] = []
    for dstate in SS_SHAPE["dstates"]:
        log(f"selective scan B={batch} D={dim} T={steps} N={dstate} bf16, fp32 state")
        shape = {"B": batch, "D": dim, "T": steps, "N": dstate, "dtype": "bfloat16",
                 "delta_softplus": True, "delta_bias": True, "D_skip": True}

        sets = [make_ss_inputs(batch, dim, steps, dstate) for _ in range(2)]
        t0 = time.time()
        ref = ref_fn(*sets[0][:6], delta_bias=sets[0][6], delta_softplus=True)
        log(f"  reference {time.time() - t0:.1f} s")
        fl = cost.flops(batch, dim, steps, dstate, True, True, True)
        nb = cost.bytes_moved(batch, dim, steps, dstate, has_d=True, has_bias=True)
        bd = 1024 // dstate  # best block in the first H200 run (64 at N=16, 16 at N=64)
        # Earlier H200 runs (bench/results/ssm_h200_run*.json) also timed time-major copies and
        # other block sizes; they were slower and are not repeated here.
        configs = [
            ("sequential", {"block_d": bd, "num_warps": 4, "transpose_bc": False}),
            ("sequential", {"block_d": bd, "num_warps": 4, "sp_tile": False}),
            ("sequential", {"block_d": bd, "num_warps": 4, "sp_tile": True}),
            ("sequential", {"block_d": bd * 2, "num_warps": 8, "sp_tile": False}),
            ("sequential", {"block_d": bd * 2, "num_warps": 8, "sp_tile": True}),
            ("sequential", {"block_d": bd // 2, "num_warps": 2, "sp_tile": True}),
            ("assoc", {"block_t": 16}),
        ]
        if quick:
            configs = configs[1:3]
        for sched, cfg in configs:
            def fn(u, delta, A, Bm, Cm, Dsk, bias, nan_out, _s=sched, _c=cfg):
                return ss(u, delta, A, Bm, Cm, Dsk, bias, True, schedule=_s, **_c,
                          out=_nan_like(u) if nan_out else None)
            name = f"ss_{sched}_" + "_".join(f"{k}{v}" for k, v in cfg.items())
            run_variant(table, name, fn, sets, ref, REL_BOUND["selective_scan"], fl, nb, ceil,
                        extra={"op": "selective_scan", "schedule": sched, "config": cfg,
                               "shape": shape, "impl": "bundled"}, budget_ms=400)
        add_row(table, {"op": "selective_scan", "name": "mamba_cuda_selective_scan (external)",
                      "impl": "peer-external", "shape": shape, "ms": MAMBA_CUDA_SS_MS[dstate],
                      "note": "Mamba's CUDA kernel on an H200 as quoted in issue 4; not run here",
                      **roofline(fl, nb, MAMBA_CUDA_SS_MS[dstate], ceil)})
        del sets, ref
        torch.cuda.empty_cache()
    return table


# ----------------------------------------------------------------------------- SSD


def load_peers() -> dict[str, Any]:
    peers: dict[str, Any] = {}
    try:
        from fla.ops.simple_gla import chunk_simple_gla, fused_recurrent_simple_gla

        peers["fla_chunk_simple_gla"] = chunk_simple_gla
        peers["fla_fused_recurrent_simple_gla"] = fused_recurrent_simple_gla
        import fla

        peers["fla_version"] = fla.__version__
    except Exception as exc:
        peers["fla_error"] = f"{type(exc).__name__}: {exc}"
    try:

        spec = None
        for entry in sys.path:
            cand = Path(entry or ".") / "mamba_ssm"
            if (cand / "ops" / "triton" / "ssd_combined.py").is_file():
                spec = cand
                break
        if spec is None:
            raise ImportError("mamba_ssm not found on sys.path")
        # The package __init__ imports CUDA extensions that are not built: skip it.
        pkg = types.ModuleType("mamba_ssm")
        pkg.__path__ = [str(spec)]
        sys.modules["mamba_ssm"] = pkg
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined

        peers["mamba_chunk_scan_combined"] = mamba_chunk_scan_combined
        peers["mamba_ssm_path"] = str(spec)
    except Exception as exc:
        peers["mamba_error"] = f"{type(exc).__name__}: {exc}"
    return peers


def bench_ssd(ceil: dict[str, float], quick: bool, peers: dict[str, Any]) -> list[dict[str, Any]]:
    R = load_op("ssd", "reference")
    scan = load_op("ssd", "scan").ssd_scan
    chunked = load_op("ssd", "chunked")
    quad = load_op("ssd", "quadratic").ssd_quadratic
    pc = load_op("ssd", "per_channel").ssd_chunked_per_channel
    cost = load_op("ssd", "cost")
    heads, p, n = SSD_SHAPE["heads"], SSD_SHAPE["headdim"], SSD_SHAPE["dstate"]
    groups, tokens = SSD_SHAPE["groups"], SSD_SHAPE["tokens"]
    table: list[dict[str, Any]] = []
    steps_list = SSD_SHAPE["steps"] if not quick else SSD_SHAPE["steps"][:1]
    bound = REL_BOUND["ssd"]
    for steps in steps_list:
        batch = tokens // steps
        shape = {"B": batch, "T": steps, "H": heads, "P": p, "N": n, "G": groups,
                 "dtype": "bfloat16", "dt_dtype": "float32", "D_skip": False}
        log(f"SSD B={batch} T={steps} H={heads} P={p} N={n} G={groups} bf16")

        sets = [make_ssd_inputs(batch, steps, heads, p, groups, n) for _ in range(2)]
        t0 = time.time()
        ref = R.ssd_reference(*sets[0])
        log(f"  reference {time.time() - t0:.1f} s")
        nb = cost.bytes_moved(batch, steps, heads, p, n, groups)
        common = {"op": "ssd", "shape": shape}

        best_chunked = None
        chunk_cfgs = [{"chunk_size": 64}, {"chunk_size": 128}, {"chunk_size": 256},
                      {"chunk_size": 256, "block_m": 128, "num_warps": 8},
                      {"chunk_size": 256, "block_m": 128, "num_warps": 4},
                      {"chunk_size": 128, "block_m": 128, "num_warps": 8}]
        if quick:
            chunk_cfgs = chunk_cfgs[:3]
        for cfg in chunk_cfgs:
            fl = cost.flops("chunked", batch, steps, heads, p, n, cfg["chunk_size"])
            moved = cost.chunked_bytes(batch, steps, heads, p, n, cfg["chunk_size"], groups)
            row = bench_ours(table, "chunked", chunked.ssd_chunked, cfg, fl, sets, ref, nb, ceil,
                             common, {"bytes_chunked": moved})
            if "ms" in row and (best_chunked is None or row["ms"] < best_chunked["ms"]):
                best_chunked = row
        fl_scan = cost.flops("scan", batch, steps, heads, p, n)
        for cfg in ({"block_p": 8, "num_warps": 1}, {"block_p": 4, "num_warps": 1},
                    {"block_p": 2, "num_warps": 1}, {"block_p": 16, "num_warps": 1}):
            bench_ours(table, "scan", scan, cfg, fl_scan, sets, ref, nb, ceil, common)
            if quick:
                break
        fl_quad = cost.flops("quadratic", batch, steps, heads, p, n)
        for cfg in ({"block_m": 64},):
            bench_ours(table, "quadratic", quad, cfg, fl_quad, sets, ref, nb, ceil, common)
        # Claim A5: per-channel decay with the same math (log-decay dt*A broadcast over N).
        pc_sets = [(x, dt, (dt * A)[..., None].expand(*dt.shape, n).contiguous(), Bm, Cm)
                   for x, dt, A, Bm, Cm in sets]
        for cs_ in (64, 128):
            def fn_pc(x, dt, g, Bm, Cm, nan_out, _c=cs_):
                return pc(x, dt, g, Bm, Cm, chunk_size=_c, out=_nan_like(x) if nan_out else None)
            fl = cost.flops("chunked", batch, steps, heads, p, n, cs_)
            nb_pc = nb + batch * steps * heads * n * 4
            run_variant(table, f"ssd_per_channel_chunk_size{cs_}", fn_pc, pc_sets, ref, bound, fl,
                        nb_pc, ceil, extra={**common, "impl": "bundled", "schedule": "per_channel",
                                            "config": {"chunk_size": cs_},
                                            "note": "log-decay [B,T,H,N] fp32 = dt*A broadcast; "
                                                    "bytes include reading it"})
        del pc_sets
        # Claim B1: time of each stage of the best chunked configuration.
        if best_chunked is not None:
            cfg = best_chunked["config"]
            run = chunked.ssd_chunked_stages(*sets[0], **cfg)
            stages = {}
            for sname, launch in run.stages.items():
                stages[sname] = time_cuda(lambda _l=launch: _l(), [()], warmup=3, reps=30,
                                          budget_ms=200).as_dict()
            total = sum(s["median_ms"] for s in stages.values())
            add_row(table, {**common, "name": "ssd_chunked_stages", "impl": "bundled",
                          "config": cfg, "stages": stages,
                          "matmul_share": sum(stages[s]["median_ms"]
                                              for s in chunked.MATMUL_STAGES) / total})
            log("  stages: " + ", ".join(f"{k} {v['median_ms']:.3f} ms"
                                         for k, v in stages.items()))
        # Peers, on the same inputs.
        fl_ch256 = cost.flops("chunked", batch, steps, heads, p, n, 256)
        if "mamba_chunk_scan_combined" in peers:
            mcs = peers["mamba_chunk_scan_combined"]
            for chunk in (256, 64) if not quick else (256,):
                def fn_m(x, dt, A, Bm, Cm, nan_out, _c=chunk, _m=mcs):
                    with torch.no_grad():
                        return _m(x, dt, A, Bm, Cm, chunk_size=_c)
                run_variant(table, f"peer_mamba_chunk_scan_combined_chunk{chunk}", fn_m, sets,
                            ref, bound, cost.flops("chunked", batch, steps, heads, p, n, chunk),
                            nb, ceil, extra={**common, "impl": "peer:mamba_ssm 2.3.2.post1",
                                             "config": {"chunk_size": chunk}})
        if "fla_chunk_simple_gla" in peers:
            fla_sets = []
            for x, dt, A, Bm, Cm in sets:
                q = Cm.expand(batch, steps, heads, n).contiguous()
                k = Bm.expand(batch, steps, heads, n).contiguous()
                v = (x.float() * dt[..., None]).to(x.dtype)
                g = (dt * A).contiguous()
                fla_sets.append((q, k, v, g))
            for key, fl in (("fla_chunk_simple_gla", fl_ch256),
                            ("fla_fused_recurrent_simple_gla", fl_scan)):
                f = peers[key]

                def fn_f(q, k, v, g, nan_out, _f=f):
                    with torch.no_grad():
                        return _f(q, k, v, g=g, scale=1.0)[0]
                run_variant(table, f"peer_{key}", fn_f, fla_sets, ref, bound, fl, nb, ceil,
                            extra={**common, "impl": f"peer:fla-core {peers.get('fla_version')}",
                                   "note": "q=C, k=B broadcast to H, v=x*dt (bf16), g=dt*A, "
                                           "scale=1; flops column: chunked(256) / scan count"})
            del fla_sets
        del sets, ref
        torch.cuda.empty_cache()
    return table


def summary(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'name':58s} {'shape':22s} {'ms':>8s} {'TFLOP/s':>8s} {'GB/s':>7s} {'frac':>6s}"]
    for r in rows:
        if "ms" not in r:
            if "matmul_share" in r:
                lines.append(f"{r['name']:58s} matmul share {r['matmul_share']:.2f}")
            elif r.get("error") or r.get("correct") is False:
                lines.append(f"{r['name']:58s} FAILED {r.get('error', r.get('rel_err'))}"[:120])
            continue
        s = r.get("shape", {})
        shp = f"B{s.get('B')} T{s.get('T')} N{s.get('N')}"
        lines.append(f"{r['name'][:58]:58s} {shp:22s} {r['ms']:8.3f} {r['tflops']:8.2f} "
                     f"{r['gbps']:7.0f} {r['frac_roofline']:6.3f}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="ss,ssd")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench/kernels_ssm.py needs a CUDA GPU", file=sys.stderr)
        return 2
    started = time.time()
    RESULTS.update(machine=fingerprint(), command=" ".join([sys.executable, *sys.argv]),
                   started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if os.environ.get("OUT"):
        OUT_PATHS.append(Path(os.environ["OUT"]) / "ssm_h200.json")
    if args.out is not None:
        OUT_PATHS.append(args.out)
    ceil = measure_ceilings(args.quick)
    RESULTS["ceilings"] = ceil
    log(f"ceilings: bf16 matmul {ceil['bf16_matmul_tflops']:.0f} TFLOP/s, "
        f"copy {ceil['copy_gbps']:.0f} GB/s")
    flush()
    sections = args.sections.split(",")
    if "ssd" in sections:
        peers = load_peers()
        RESULTS["peers"] = {k: v for k, v in peers.items() if isinstance(v, str)}
        log(f"peers: {RESULTS['peers']}")
        bench_ssd(ceil, args.quick, peers)
    if "ss" in sections:
        bench_selective_scan(ceil, args.quick)
    RESULTS["wall_s"] = time.time() - started
    flush()
    log("\n".join(summary(PARTIAL)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
