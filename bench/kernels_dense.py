"""Dense and reduction kernels on one GPU: correctness on the timed inputs, then speed beside peers.

    python bench/kernels_dense.py [--out FILE] [--quick] [--only gemm,int8,...]

In one run: measures the two ceilings (cuBLAS bf16 GEMM on 8192^3 random data; device-to-device
copy bandwidth, bytes read + written), then for each bundled kernel checks its output on the
timed inputs against a reference, times it and its peer with CUDA events (median, inputs rotated
where one set would sit in L2) and reports achieved TFLOP/s or GB/s and the fraction of the
roofline floor max(FLOPs / peak, bytes / bandwidth) reached. Writes JSON to --out (default
`dense_<gpu>.json` in $OUT, else in bench/results) and prints a table last. A section that fails
is recorded as an error and the run goes on; a kernel whose check fails is never timed.
"""

from __future__ import annotations

import math
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, header, parser, write_json
from flopkb.kernelpkg import load_op
from flopkb.verify.machine import fingerprint
from flopkb.verify.timing import Timing, time_cuda

# Datasheet figures (NVIDIA H100/H200 SXM datasheet, dense, no sparsity). The int8 and fp32-SIMT
# rates stand in as ceilings for the paths that have no measured one in this run; bf16 and
# bandwidth fractions use the ceilings measured below. The bf16 rate and HBM bandwidth are the
# hard limits of the "below the floor" sanity check on an H200 (a kernel may beat cuBLAS, it
# may not beat the hardware).
DATASHEET_INT8_TOPS = 1979e12
DATASHEET_FP32_SIMT_FLOPS = 67e12
DATASHEET_H200_BF16_FLOPS = 989e12
DATASHEET_H200_HBM_BYTES_PER_S = 4.8e12

gemm_cost = load_op("gemm", "cost")
attn_cost = load_op("attention", "cost")
red_cost = load_op("reduction", "cost")
ew_cost = load_op("elementwise", "cost")

ROWS: list[dict[str, Any]] = []
# the Triton GEMM schedule the low-rank and SIMT comparisons use: the fastest one bench_gemm saw
BEST_SCHEDULE = "auto"
DEVICE = "cuda"
# Full sizes fill an H200 and sit far past its 60 MB L2; --quick sizes are a smoke run only.
FULL = {"peak": 8192, "gemm": (4096, 8192), "int8": 8192, "lowrank": 8192, "ranks": (256, 1024),
        "simt": 4096, "reduce": 16 * 2**20, "copy": 2**28, "ew": 2**27, "tokens": 32768,
        "seq": (2048, 4096, 16384)}
QUICK = {"peak": 64, "gemm": (64,), "int8": 64, "lowrank": 64, "ranks": (16,),
         "simt": 32, "reduce": 2**18, "copy": 2**20, "ew": 2**18, "tokens": 256, "seq": (128,)}


def bf16_pair(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random bf16 [n, n] operands (never zeros: they run faster than real data)."""
    return tuple(torch.randn(n, n, device=DEVICE).bfloat16() for _ in range(2))


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def timed(
    fn: Callable[..., Any], arg_sets: list[tuple[Any, ...]], calls: int = 10, reps: int = 20
) -> Timing:
    """Per-call device time of fn: `calls` back-to-back calls (cycling over arg_sets) captured in
    one CUDA graph, replays timed with `time_cuda`, every statistic divided by `calls`.

    Timing eager calls between two events would add the host's launch latency (tens of us for a
    Python-launched Triton kernel) to every sample, a bias against Triton that can reach 10-20%
    on a 0.2 ms GEMM and dominates a 20 us reduction; graph replay measures the device work.
    The first calls (JIT compile, autotune) run before capture.
    """
    for args in arg_sets:
        fn(*args)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for args in arg_sets:
            fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(*arg_sets[i % len(arg_sets)])
    t = time_cuda(graph.replay, [()], warmup=2, reps=reps, budget_ms=500.0)
    del graph
    return Timing(t.median_ms / calls, t.p10_ms / calls, t.p90_ms / calls, t.min_ms / calls,
                  t.max_ms / calls, t.reps)


def eager_timed(fn: Callable[..., Any], arg_sets: list[tuple[Any, ...]]) -> Timing:
    """Eager per-call time, host launch latency included (what a latency-sensitive caller sees)."""
    return time_cuda(fn, arg_sets, warmup=5, reps=100, budget_ms=300.0)


def record(
    section: str, variant: str, shape: dict[str, Any], timing: Timing, *, flops: int,
    nbytes: int, ceilings: dict[str, float], peer: str | None = None,
    peak_flops: float | None = None, peak_label: str = "cublas_bf16_measured",
    check: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One result row: time, achieved rates, roofline floor and fraction, peer ratio."""
    seconds = timing.median_ms * 1e-3
    peak = peak_flops if peak_flops is not None else ceilings["bf16_flops"]
    floor_s = max(flops / peak, nbytes / ceilings["copy_bytes_per_s"])
    row = {
        "section": section, "variant": variant, "shape": shape, "timing_ms": timing.as_dict(),
        "flops": flops, "bytes": nbytes, "tflops": flops / seconds / 1e12,
        "gbs": nbytes / seconds / 1e9, "floor_ms": floor_s * 1e3,
        "roofline_fraction": floor_s / seconds, "peak_used": peak_label,
        "bound": "compute" if flops / peak >= nbytes / ceilings["copy_bytes_per_s"] else "memory",
        "peer": peer, "check": check or {},
    } | (extra or {})
    if ceilings.get("hard_bf16_flops"):
        hard_peak = max(peak, ceilings["hard_bf16_flops"])
        hard_floor = max(flops / hard_peak, nbytes / ceilings["hard_bytes_per_s"])
        if hard_floor > seconds:
            # faster than the datasheet allows: a broken kernel or timer, never a result
            row["error"] = (f"median {seconds * 1e3:.4f} ms below the datasheet floor "
                            f"{hard_floor * 1e3:.4f} ms")
    ROWS.append(row)
    return row


def section(name: str, fn: Callable[[], None], errors: dict[str, str]) -> None:
    try:
        fn()
    except Exception as err:  # one broken section must not lose the others' figures
        traceback.print_exc()
        errors[name] = f"{type(err).__name__}: {err}"
    torch.cuda.empty_cache()


def measure_ceilings(size: dict[str, Any]) -> dict[str, float]:
    n = size["peak"]
    sets = [bf16_pair(n) for _ in range(2)]
    t_mm = timed(torch.matmul, sets, calls=4)
    del sets
    numel = size["copy"]  # 1 GiB of fp32 per buffer: far past the 60 MB L2
    src = torch.randn(numel, device=DEVICE)
    dst = torch.empty_like(src)
    # A captured copy_ becomes a graph memcpy node, which may run on a copy engine rather than
    # the SMs: time it both ways and keep the faster as the ceiling.
    t_copy_graph = timed(lambda s, d: d.copy_(s), [(src, dst)], calls=4)
    t_copy_eager = time_cuda(lambda s, d: d.copy_(s), [(src, dst)], warmup=3, reps=30)
    t_copy = min(t_copy_graph, t_copy_eager, key=lambda t: t.median_ms)
    del src, dst
    ceilings = {
        "bf16_flops": 2 * n**3 / (t_mm.median_ms * 1e-3),
        "copy_bytes_per_s": 2 * numel * 4 / (t_copy.median_ms * 1e-3),
    }
    if "H200" in torch.cuda.get_device_name():
        ceilings |= {"hard_bf16_flops": DATASHEET_H200_BF16_FLOPS,
                     "hard_bytes_per_s": DATASHEET_H200_HBM_BYTES_PER_S}
    ROWS.append({"section": "ceiling", "variant": "cublas_bf16", "shape": {"M": n, "N": n, "K": n},
                 "timing_ms": t_mm.as_dict(), "tflops": ceilings["bf16_flops"] / 1e12,
                 "tflops_at_p10": 2 * n**3 / (t_mm.p10_ms * 1e-3) / 1e12})
    ROWS.append({"section": "ceiling", "variant": "d2d_copy",
                 "shape": {"bytes_each_way": numel * 4}, "timing_ms": t_copy.as_dict(),
                 "gbs": ceilings["copy_bytes_per_s"] / 1e9,
                 "graph_timing_ms": t_copy_graph.as_dict(),
                 "eager_timing_ms": t_copy_eager.as_dict()})
    return ceilings


def bench_gemm(ceilings: dict[str, float], size: dict[str, Any]) -> None:
    """Every Triton schedule against cuBLAS; the peer is timed before and after the Triton
    variants and the faster of its two medians is used (the conservative ratio: clocks drift
    under sustained load). The fastest schedule at the largest size becomes BEST_SCHEDULE."""
    global BEST_SCHEDULE
    tg = load_op("gemm", "triton_gemm")
    ref = load_op("gemm", "reference")
    best: dict[str, float] = {}
    for n in size["gemm"]:
        sets = [bf16_pair(n) for _ in range(3)]
        a, b = sets[0]
        expected = ref.matmul_reference(a, b)
        shape = {"M": n, "N": n, "K": n, "dtype": "bf16"}
        fl, nb = gemm_cost.flops(n, n, n), gemm_cost.bytes_moved(n, n, n)
        calls = 10 if n <= 4096 else 4
        t_before = timed(torch.matmul, sets, calls=calls)
        variants: dict[str, tuple[Timing, dict[str, Any]]] = {}
        for schedule in ("pointer", "tma", "tma_persistent"):
            def run(a, b, schedule=schedule):
                return tg.matmul(a, b, schedule=schedule)
            try:
                err = rel_err(run(a, b), expected)
                if err > 1e-2:
                    raise AssertionError(f"triton GEMM ({schedule}) wrong at {n}: {err}")
                kernel = {"pointer": tg._kernel, "tma": tg._tma_kernel,
                          "tma_persistent": tg._tma_persistent_kernel}[schedule]
                t = timed(run, sets, calls=calls)
                variants[schedule] = (t, {"rel_err": err, "bound": 1e-2,
                                          "config": str(kernel.best_config)})
            except Exception as exc:
                traceback.print_exc()
                ROWS.append({"section": "gemm", "variant": f"triton_bf16_{schedule}",
                             "shape": shape, "error": f"{type(exc).__name__}: {exc}"})
        t_after = timed(torch.matmul, sets, calls=calls)
        t_peer = min(t_before, t_after, key=lambda t: t.median_ms)
        peer = record("gemm", "cublas_bf16", shape, t_peer, flops=fl, nbytes=nb,
                      ceilings=ceilings,
                      check={"rel_err": rel_err(torch.matmul(a, b), expected), "bound": 1e-2},
                      extra={"median_before_ms": t_before.median_ms,
                             "median_after_ms": t_after.median_ms})
        for schedule, (t, info) in variants.items():
            record("gemm", f"triton_bf16_{schedule}", shape, t, flops=fl, nbytes=nb,
                   ceilings=ceilings, peer="cublas_bf16", check=info,
                   extra={"speed_vs_peer": peer["timing_ms"]["median_ms"] / t.median_ms,
                          "target": ">= 0.85x cuBLAS", "config": info["config"]})
            best[schedule] = t.median_ms
        del sets
    if best:
        BEST_SCHEDULE = min(best, key=best.get)


def bench_int8(ceilings: dict[str, float], size: dict[str, Any]) -> None:
    i8 = load_op("gemm", "int8")
    n = size["int8"]
    # b = w.t() for a w [N, K] weight: K-contiguous, the layout 8-bit MMAs read
    sets = [(torch.randint(-128, 128, (n, n), dtype=torch.int8, device=DEVICE),
             torch.randint(-128, 128, (n, n), dtype=torch.int8, device=DEVICE).t())
            for _ in range(3)]
    a, b = sets[0]
    native = i8.int8_matmul_torch(a, b)

    def emulated_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # bf16 x bf16 -> fp32 output (torch.mm's out_dtype): the integral sums are not rounded
        # to bf16, so the result is exact like the Triton emulation
        a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
        try:
            return torch.mm(a16, b16, out_dtype=torch.float32).to(torch.int32)
        except (NotImplementedError, RuntimeError, TypeError):
            # older torch, or no CUDA: bf16 output, rounded, so its check reports "not exact"
            return torch.mm(a16, b16).to(torch.int32)

    paths = {"torch_int_mm": i8.int8_matmul_torch, "triton_int8": i8.int8_matmul_triton,
             "triton_emulated_bf16": i8.int8_matmul_emulated, "torch_emulated_bf16": emulated_torch}
    shape = {"M": n, "N": n, "K": n, "dtype": "int8", "b_layout": "K-contiguous"}
    fl, nb = gemm_cost.flops(n, n, n), gemm_cost.bytes_moved(n, n, n, in_bytes=1, out_bytes=4)
    kernel_of = {"triton_int8": "_native_kernel", "triton_emulated_bf16": "_emulated_kernel"}
    peer_ms = None
    for name, fn in paths.items():
        exact = bool(torch.equal(fn(a, b), native))
        if not exact and name != "torch_emulated_bf16":
            raise AssertionError(f"{name} differs from torch._int_mm at K={n}")
        t = timed(fn, sets, calls=4)
        peer_ms = peer_ms or t.median_ms
        record("int8", name, shape, t, flops=fl, nbytes=nb, ceilings=ceilings,
               peer=None if name == "torch_int_mm" else "torch_int_mm",
               peak_flops=DATASHEET_INT8_TOPS, peak_label="int8_datasheet_1979T",
               check={"equal_to_int_mm": exact},
               extra={"speed_vs_peer": peer_ms / t.median_ms,
                      "config": str(getattr(getattr(i8, kernel_of.get(name, ""), None),
                                            "best_config", None))})


def bench_lowrank(ceilings: dict[str, float], size: dict[str, Any]) -> None:
    lr = load_op("gemm", "lowrank")
    ref = load_op("gemm", "reference")
    m = k = n = size["lowrank"]
    x = torch.randn(m, k, device=DEVICE).bfloat16()
    W = torch.randn(k, n, device=DEVICE).bfloat16() / math.sqrt(k)
    dense_shape = {"M": m, "K": k, "N": n}
    fl, nb = gemm_cost.flops(m, n, k), gemm_cost.bytes_moved(m, n, k)
    sch = BEST_SCHEDULE
    t_dense = {b: timed(lambda x, W, b=b: lr.dense_matmul(x, W, backend=b, schedule=sch),
                        [(x, W)], calls=4)
               for b in ("torch", "triton")}
    for b, t in t_dense.items():
        record("lowrank", f"dense_{b}", dense_shape, t, flops=fl, nbytes=nb, ceilings=ceilings,
               extra={"schedule": sch if b == "triton" else None})
    for r in size["ranks"]:
        U = torch.randn(k, r, device=DEVICE).bfloat16() / math.sqrt(k)
        V = torch.randn(r, n, device=DEVICE).bfloat16() / math.sqrt(r)
        err = rel_err(lr.lowrank_matmul(x, U, V, schedule=sch), ref.lowrank_reference(x, U, V))
        if err > 2e-2:
            raise AssertionError(f"low-rank Triton path wrong at r={r}: {err}")
        for b in ("torch", "triton"):
            t = timed(lambda x, U, V, b=b: lr.lowrank_matmul(x, U, V, backend=b, schedule=sch),
                      [(x, U, V)], calls=4)
            record("lowrank", f"lowrank_{b}_r{r}", dense_shape | {"r": r}, t,
                   flops=gemm_cost.lowrank_flops(m, k, n, r),
                   nbytes=gemm_cost.lowrank_bytes_moved(m, k, n, r), ceilings=ceilings,
                   peer=f"dense_{b}", check={"rel_err": err, "bound": 2e-2},
                   extra={"speedup_vs_dense": t_dense[b].median_ms / t.median_ms,
                          "schedule": sch if b == "triton" else None})


def bench_simt(ceilings: dict[str, float], size: dict[str, Any]) -> None:
    simt = load_op("gemm", "simt")
    tg = load_op("gemm", "triton_gemm")
    ref = load_op("gemm", "reference")
    n = size["simt"]
    sets = [(torch.randn(n, n, device=DEVICE), torch.randn(n, n, device=DEVICE)) for _ in range(2)]
    a, b = sets[0]
    err = rel_err(simt.simt_matmul(a, b), ref.matmul_reference(a, b))
    if err > 1e-5:
        raise AssertionError(f"SIMT GEMM wrong: {err}")
    shape = {"M": n, "N": n, "K": n, "dtype": "fp32"}
    fl, nb = gemm_cost.flops(n, n, n), gemm_cost.bytes_moved(n, n, n, in_bytes=4, out_bytes=4)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        t_sgemm = timed(torch.matmul, sets, calls=2)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    t_simt = timed(simt.simt_matmul, sets, calls=2)
    bf_sets = [(x.bfloat16(), y.bfloat16()) for x, y in sets]
    t_tc = timed(lambda a, b: tg.matmul(a, b, schedule=BEST_SCHEDULE), bf_sets)
    record("simt", "cublas_sgemm_fp32", shape, t_sgemm, flops=fl, nbytes=nb, ceilings=ceilings,
           peak_flops=DATASHEET_FP32_SIMT_FLOPS, peak_label="fp32_simt_datasheet_67T")
    record("simt", "triton_simt_fp32", shape, t_simt, flops=fl, nbytes=nb, ceilings=ceilings,
           peer="cublas_sgemm_fp32", peak_flops=DATASHEET_FP32_SIMT_FLOPS,
           peak_label="fp32_simt_datasheet_67T", check={"rel_err": err, "bound": 1e-5},
           extra={"speed_vs_peer": t_sgemm.median_ms / t_simt.median_ms,
                  "config": str(simt._kernel.best_config)})
    record("simt", "triton_bf16_tensor_core", shape | {"dtype": "bf16"}, t_tc, flops=fl,
           nbytes=gemm_cost.bytes_moved(n, n, n), ceilings=ceilings,
           extra={"schedule": BEST_SCHEDULE,
                  "tensor_to_simt_ratio_triton": t_simt.median_ms / t_tc.median_ms,
                  "tensor_to_simt_ratio_vs_cublas_sgemm": t_sgemm.median_ms / t_tc.median_ms})


def bench_reduction(ceilings: dict[str, float], size: dict[str, Any]) -> None:
    atomic = load_op("reduction", "atomic")
    ordered = load_op("reduction", "ordered")
    ref = load_op("reduction", "reference")
    n = size["reduce"]
    sets = [(torch.randn(n, device=DEVICE),) for _ in range(4)]
    x = sets[0][0]
    exact = ref.sum_reference(x).item()
    bound = ref.sum_error_bound(x, atomic.BLOCK)
    check = {}
    for name, fn in (("atomic", atomic.atomic_sum), ("ordered", ordered.ordered_sum)):
        err = abs(fn(x).double().item() - exact)
        if err > bound:
            raise AssertionError(f"{name} sum off by {err} > {bound}")
        runs = [fn(x).view(torch.int32).item() for _ in range(100)]
        check[name] = {"abs_err": err, "bound": bound, "distinct_bitwise_over_100": len(set(runs))}
    shape = {"n": n, "dtype": "fp32", "block": atomic.BLOCK}
    fl, nb = red_cost.flops(n), red_cost.bytes_moved(n)
    t_torch = timed(torch.sum, sets, calls=40)
    t_atomic = timed(atomic.atomic_sum, sets, calls=40)
    t_ordered = timed(ordered.ordered_sum, sets, calls=40)
    eager = {name: eager_timed(fn, sets).as_dict() for name, fn in
             (("torch_sum", torch.sum), ("atomic_sum", atomic.atomic_sum),
              ("ordered_sum", ordered.ordered_sum))}
    record("reduction", "torch_sum", shape, t_torch, flops=fl, nbytes=nb, ceilings=ceilings)
    record("reduction", "atomic_sum", shape, t_atomic, flops=fl, nbytes=nb, ceilings=ceilings,
           peer="torch_sum", check=check["atomic"],
           extra={"speed_vs_peer": t_torch.median_ms / t_atomic.median_ms,
                  "eager_timing_ms": eager["atomic_sum"],
                  "eager_torch_sum_ms": eager["torch_sum"]})
    record("reduction", "ordered_sum", shape, t_ordered, flops=fl, nbytes=nb, ceilings=ceilings,
           peer="atomic_sum", check=check["ordered"],
           extra={"time_ratio_vs_atomic": t_ordered.median_ms / t_atomic.median_ms,
                  "eager_timing_ms": eager["ordered_sum"],
                  "eager_time_ratio_vs_atomic": eager["ordered_sum"]["median_ms"]
                  / eager["atomic_sum"]["median_ms"],
                  "target": "<= 2x atomic"})


def bench_elementwise(ceilings: dict[str, float], size: dict[str, Any]) -> None:
    ew = load_op("elementwise", "axpby")
    ref = load_op("elementwise", "reference")
    n = size["ew"]  # 512 MiB per fp32 tensor at full size
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    out = ew.axpby(x, y, 1.5, -0.25)
    if not torch.allclose(out, ref.axpby_reference(x, y, 1.5, -0.25), rtol=1e-6, atol=1e-6):
        raise AssertionError("axpby wrong")
    shape = {"n": n, "dtype": "fp32"}
    fl, nb = ew_cost.flops(n), ew_cost.bytes_moved(n)
    t_peer = timed(lambda x, y, o: torch.add(x, y, alpha=-0.25, out=o), [(x, y, out)])
    t_eager = timed(lambda x, y: 1.5 * x - 0.25 * y, [(x, y)], calls=2)
    t_ew = timed(lambda x, y, o: ew.axpby(x, y, 1.5, -0.25, out=o), [(x, y, out)])
    record("elementwise", "torch_add_alpha", shape, t_peer, flops=n * 2, nbytes=nb,
           ceilings=ceilings)
    record("elementwise", "torch_eager_axpby", shape, t_eager, flops=fl, nbytes=nb,
           ceilings=ceilings, extra={"note": "3 kernels: 5 n elements of traffic, counted as 3n"})
    record("elementwise", "triton_axpby", shape, t_ew, flops=fl, nbytes=nb, ceilings=ceilings,
           peer="torch_add_alpha", extra={"speed_vs_peer": t_peer.median_ms / t_ew.median_ms})


def bench_attention(ceilings: dict[str, float], size: dict[str, Any]) -> None:
    sd = load_op("attention", "sdpa")
    ref = load_op("attention", "reference")
    tokens, H, D = size["tokens"], 32, 64
    for T in size["seq"]:
        B = tokens // T
        q, k, v = (torch.randn(B, T, H, D, device=DEVICE).bfloat16() for _ in range(3))
        backend = sd.attention_backend(q, k, v, backend="flash")
        o = sd.causal_attention(q, k, v, backend="flash")
        # fp32 reference on one batch row and two heads (the full T x T scores would not fit)
        sl = (slice(0, 1), slice(None), slice(0, 2))
        err = rel_err(o[sl], ref.causal_attention_reference(q[sl], k[sl], v[sl]))
        if err > 2e-2:
            raise AssertionError(f"flash attention wrong at T={T}: {err}")
        t = timed(lambda q, k, v: sd.causal_attention(q, k, v, backend="flash"), [(q, k, v)],
                  calls=4)
        record("attention", "sdpa_flash_causal", {"B": B, "T": T, "H": H, "D": D, "dtype": "bf16"},
               t, flops=attn_cost.flops(B, T, H, D), nbytes=attn_cost.bytes_moved(B, T, H, D),
               ceilings=ceilings, check={"backend": backend, "rel_err": err, "bound": 2e-2})
        del q, k, v, o


def print_table(ceilings: dict[str, float], errors: dict[str, str]) -> None:
    print(f"\nceilings: cuBLAS bf16 {ceilings['bf16_flops'] / 1e12:.0f} TFLOP/s, "
          f"copy {ceilings['copy_bytes_per_s'] / 1e9:.0f} GB/s")
    print(f"{'section':<12}{'variant':<28}{'shape':<28}{'ms':>9}{'TFLOP/s':>9}{'GB/s':>8}"
          f"{'roof':>6}  vs peer")
    for row in ROWS:
        if row["section"] == "ceiling":
            continue
        if "timing_ms" not in row:
            print(f"{row['section']:<12}{row['variant']:<28}ERROR {row.get('error')}")
            continue
        shape = ",".join(str(v) for k, v in row["shape"].items() if k not in ("dtype", "b_layout"))
        ratio = next((f"{k}={row[k]:.2f}" for k in ("speed_vs_peer", "time_ratio_vs_atomic",
                      "speedup_vs_dense", "tensor_to_simt_ratio_triton") if k in row), "")
        print(f"{row['section']:<12}{row['variant']:<28}{shape:<28}"
              f"{row['timing_ms']['median_ms']:>9.4f}{row['tflops']:>9.1f}{row['gbs']:>8.0f}"
              f"{row['roofline_fraction']:>6.2f}  {ratio}"
              f"{' ERROR ' + row['error'] if 'error' in row else ''}")
    for name, message in errors.items():
        print(f"ERROR in {name}: {message}")


def main() -> int:
    ap = parser(__doc__, quick=True)
    ap.add_argument("--only", default="", help="comma-separated sections to run")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("kernels_dense: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    machine = fingerprint()
    size = QUICK if args.quick else FULL
    ceilings = measure_ceilings(size)
    errors: dict[str, str] = {}
    sections = {"gemm": bench_gemm, "int8": bench_int8, "lowrank": bench_lowrank,
                "simt": bench_simt, "reduction": bench_reduction,
                "elementwise": bench_elementwise, "attention": bench_attention}
    only = [s for s in args.only.split(",") if s]
    for name, fn in sections.items():
        if not only or name in only:
            section(name, lambda fn=fn: fn(ceilings, size), errors)
    gpu = (machine.get("gpu") or "gpu").lower().replace("nvidia ", "").replace(" ", "-")
    # without --out: $OUT (the device machine's folder that comes back) or bench/results/
    path = args.out or Path(os.environ.get("OUT") or RESULTS) / f"dense_{gpu}.json"
    started = header()
    result = {
        "benchmark": "kernels_dense", "command": started["command"],
        "timestamp": started["started"], "machine": machine, "quick": args.quick,
        "ceilings": {"bf16_tflops": ceilings["bf16_flops"] / 1e12,
                     "copy_gbs": ceilings["copy_bytes_per_s"] / 1e9},
        "best_gemm_schedule": BEST_SCHEDULE,
        "results": ROWS, "errors": errors,
    }
    write_json(path, result)
    print_table(ceilings, errors)
    print(f"wrote {path}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
