"""CUB's determinism levels beside our atomic and fixed-order sums, 1M..256M fp32, on one GPU.

    python bench/reduction_levels.py [--out PATH] [--rounds 3] [--repeats 100] [--quick]
                                     [--probe-graph]

Builds kernels/reduction/cub_levels.cu (CUB's single-phase DeviceReduce::Sum at not_guaranteed,
run_to_run and gpu_to_gpu) against the `cuda-cccl` headers (or $FLOPKB_CCCL_INCLUDE), then per
size: checks every variant against the float64 sum within its error bound, counts distinct
bitwise results over --repeats runs, and times all five variants in --rounds interleaved rounds
(the variant order rotates every round; the figure is the median of the round medians, the band
the min p10 / max p90 over rounds). Every variant is timed the same way, with device events
around each call (CUB's single-phase API allocates its temporary storage in every call, so it is
timed as its users call it); our two sums are also timed as CUDA-graph replays, and the host's
time to issue one call is recorded so that launch-bound sizes show. Inputs rotate past the L2.
`--probe-graph` last tries to capture CUB's call in a CUDA graph and records whether it worked.

Writes JSON (machine fingerprint, command, CUB build, rows, summary) to --out (default
$OUT/reduction_levels_<gpu>.json when $OUT is set, else bench/results/) and prints a table.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
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

cub = load_op("reduction", "cub")
atomic = load_op("reduction", "atomic")
ordered = load_op("reduction", "ordered")
reference = load_op("reduction", "reference")
cost = load_op("reduction", "cost")

FULL = (2**20, 4 * 2**20, 16 * 2**20, 64 * 2**20, 256 * 2**20)
QUICK = (2**20, 16 * 2**20)
LEVELS = ("not_guaranteed", "run_to_run", "gpu_to_gpu")
OURS = {"atomic": atomic.atomic_sum, "ordered": ordered.ordered_sum}
DEVICE = "cuda"


def bits(out: torch.Tensor) -> int:
    return int(out.reshape(1).view(torch.int32).item())


def inputs(n: int, l2_bytes: int) -> list[torch.Tensor]:
    """Enough independent draws that one is out of L2 before it is read again (at most 8)."""
    sets = max(1, min(8, math.ceil(2 * l2_bytes / (4 * n))))
    g = torch.Generator(device=DEVICE).manual_seed(n)
    return [torch.randn(n, generator=g, device=DEVICE) for _ in range(sets)]


def host_issue_ms(fn: Callable[[torch.Tensor], Any], x: torch.Tensor, calls: int = 20) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(x)
    issued = (time.perf_counter() - start) * 1e3 / calls
    torch.cuda.synchronize()
    return issued


def pooled(rounds: list[Timing]) -> dict[str, float]:
    return {"median_ms": statistics.median(t.median_ms for t in rounds),
            "p10_ms": min(t.p10_ms for t in rounds), "p90_ms": max(t.p90_ms for t in rounds),
            "round_medians_ms": [t.median_ms for t in rounds]}


def bench_size(lib: Any, n: int, rounds: int, repeats: int, l2: int) -> dict[str, Any]:
    xs = inputs(n, l2)
    x = xs[0]
    variants: dict[str, Callable[[torch.Tensor], Any]] = {
        **{f"cub_{lv}": (lambda v, lv=lv: lib.sum(v, lv)) for lv in LEVELS}, **OURS}
    want = reference.sum_reference(x).item()
    bound = reference.sum_error_bound(x, 8192)
    row: dict[str, Any] = {"elements": n, "bytes": cost.bytes_moved(n), "input_sets": len(xs),
                           "variants": {}}
    for name, fn in variants.items():
        err = abs(fn(x).double().item() - want)
        if err > bound:
            raise RuntimeError(f"{name} n={n}: |sum - exact| = {err:.3g} above {bound:.3g}")
        row["variants"][name] = {
            "error": err, "bound": bound,
            "distinct": len({bits(fn(x)) for _ in range(repeats)}),
            "bits": f"0x{bits(fn(x)) & 0xFFFFFFFF:08x}",
            "host_issue_ms": host_issue_ms(fn, x)}
    names = list(variants)
    timings: dict[str, list[Timing]] = {name: [] for name in names}
    for r in range(rounds):
        # a different variant goes first every round: drift and warm-up are spread over all
        for name in names[r % len(names):] + names[:r % len(names)]:
            timings[name].append(time_cuda(variants[name], [(v,) for v in xs], warmup=5,
                                           reps=100, budget_ms=400.0))
    for name in names:
        v = row["variants"][name]
        v["events"] = pooled(timings[name])
        v["gbs"] = cost.bytes_moved(n) / (v["events"]["median_ms"] * 1e-3) / 1e9
        v["launch_bound"] = v["host_issue_ms"] >= 0.5 * v["events"]["median_ms"]
    for name, fn in OURS.items():
        graph = [time_cuda(fn, [(v,) for v in xs], warmup=5, reps=100, budget_ms=400.0,
                           graph=True) for _ in range(rounds)]
        row["variants"][name]["graph"] = pooled(graph) | {"method": graph[0].method}
    ev = {name: row["variants"][name]["events"] for name in names}
    row["ratios"] = {
        "gpu_to_gpu/run_to_run": ev["cub_gpu_to_gpu"]["median_ms"] / ev["cub_run_to_run"][
            "median_ms"],
        "gpu_to_gpu/run_to_run_band": [
            ev["cub_gpu_to_gpu"]["p10_ms"] / ev["cub_run_to_run"]["p90_ms"],
            ev["cub_gpu_to_gpu"]["p90_ms"] / ev["cub_run_to_run"]["p10_ms"]],
        "run_to_run/not_guaranteed": ev["cub_run_to_run"]["median_ms"] / ev[
            "cub_not_guaranteed"]["median_ms"],
        "ordered/atomic (events)": ev["ordered"]["median_ms"] / ev["atomic"]["median_ms"],
        "ordered/atomic (graph)": row["variants"]["ordered"]["graph"]["median_ms"] / row[
            "variants"]["atomic"]["graph"]["median_ms"],
    }
    del xs
    torch.cuda.empty_cache()
    return row


def probe_graph(lib: Any) -> dict[str, Any]:
    """Can CUB's single-phase call be captured in a CUDA graph (it allocates in the call)?"""
    x = torch.randn(2**20, device=DEVICE)
    out: dict[str, Any] = {}
    for level in LEVELS:
        try:
            t = time_cuda(lambda v, lv=level: lib.sum(v, lv), [(x,)], warmup=3, reps=20,
                          graph=True)
            out[level] = {"method": t.method, "median_ms": t.median_ms}
        except Exception as exc:
            out[level] = {"error": f"{type(exc).__name__}: {exc}"}
        torch.cuda.synchronize()
    return out


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'elements':>10} {'ng ms':>8} {'r2r ms':>8} {'g2g ms':>8} {'g2g/r2r':>8} "
             f"{'distinct ng/r2r/g2g':>20} {'atomic ms':>9} {'ordered ms':>10} "
             f"{'distinct at/or':>14} {'launch-bound':>12}"]
    for r in rows:
        v = r["variants"]
        ms = {k: v[k]["events"]["median_ms"] for k in v}
        d = {k: v[k]["distinct"] for k in v}
        bound = ",".join(k.removeprefix("cub_") for k in v if v[k]["launch_bound"]) or "-"
        lines.append(
            f"{r['elements']:>10} {ms['cub_not_guaranteed']:>8.4f} {ms['cub_run_to_run']:>8.4f} "
            f"{ms['cub_gpu_to_gpu']:>8.4f} {r['ratios']['gpu_to_gpu/run_to_run']:>8.3f} "
            f"{d['cub_not_guaranteed']:>6}/{d['cub_run_to_run']}/{d['cub_gpu_to_gpu']:<8} "
            f"{ms['atomic']:>9.4f} {ms['ordered']:>10.4f} "
            f"{d['atomic']:>7}/{d['ordered']:<6} {bound:>12}")
    return lines


def main() -> int:
    ap = parser(__doc__, rounds=3, quick=True)
    ap.add_argument("--repeats", type=int, default=100, help="runs per distinct count")
    ap.add_argument("--probe-graph", action="store_true",
                    help="finally try to capture CUB's call in a CUDA graph")
    args = ap.parse_args()
    if args.rounds < 3:
        ap.error(f"expected --rounds >= 3, got {args.rounds}")
    if not torch.cuda.is_available():
        print("reduction_levels: needs a CUDA GPU", file=sys.stderr)
        return 2
    machine = fingerprint()
    started = time.monotonic()
    try:
        lib = cub.load()
    except cub.CubUnavailable as exc:
        print(f"reduction_levels: {exc}", file=sys.stderr)
        return 2
    build_s = time.monotonic() - started
    gpu = (machine.get("gpu") or "gpu").lower().replace("nvidia ", "").replace(" ", "-")
    path = args.out or Path(os.environ.get("OUT") or RESULTS) / f"reduction_levels_{gpu}.json"
    l2 = int(machine.get("l2_cache_bytes") or 50 * 2**20)
    begun = header()
    result: dict[str, Any] = {
        "benchmark": "reduction_levels", "command": begun["command"],
        "timestamp": begun["started"], "machine": machine, "cub": lib.description,
        "cub_version": lib.cub_version,
        "build_or_load_s": round(build_s, 1), "rounds": args.rounds, "repeats": args.repeats,
        "method": "device events around each call, median of round medians; ours also as "
                  "CUDA-graph replays", "rows": [], "errors": {}}
    for n in QUICK if args.quick else FULL:
        try:
            result["rows"].append(bench_size(lib, n, args.rounds, args.repeats, l2))
        except Exception as exc:  # one size failing (memory) must not lose the others
            traceback.print_exc()
            result["errors"][str(n)] = f"{type(exc).__name__}: {exc}"
        write_json(path, result)
    if args.probe_graph:
        result["graph_probe"] = probe_graph(lib)
        write_json(path, result)
    print(f"{lib.description}\n{machine.get('gpu')}, {args.rounds} rounds, events")
    print("\n".join(table(result["rows"])))
    print(f"wrote {path}")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
