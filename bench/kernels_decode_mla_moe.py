"""Absorbed MLA decode and MoE decode on a GPU, beside their torch peers in the same process.

    python bench/kernels_decode_mla_moe.py --out bench/results/decode_mla_moe_h200.json [--quick]
    python bench/kernels_decode_mla_moe.py --cpu-smoke --out /tmp/smoke.json   (no GPU: checks only)

Shapes (issue 24): MLA at Kimi Linear's sizes (32 heads, latent 512 + rope 64), contexts 128K,
512K and 1M at B = 1, 4, 8; MoE at Kimi's (256 experts, top-8, 1 shared, D 2304, F 1024) and
Mixtral 8x7B's (8 experts, top-2, D 4096, F 14336) at T = 1, 8, 64.

Per shape: build the inputs (two sets, rotated, so weights and routing differ between
consecutive calls; every call streams more than the 50 MB L2), compute the float32 check, run
every implementation once and compare (a wrong one gets no timing), then ROUNDS interleaved
rounds over the implementations, each timed two ways: CUDA-graph replay (the step captured
once over both input sets, replayed N times between two events, divided) and back-to-back eager
calls (N calls between two events). Medians over rounds. The bundled MLA kernel's launch
config is picked per shape from a short sweep (all sweep times are in the JSON). The floor is
the op's minimum bytes (kernels/<op>/cost.py) at the copy bandwidth measured at the start
(read + write bytes of a 1 GiB device copy), the fraction is floor / time. Prints the table last
and writes JSON (machine fingerprint, every sample) to --out after every shape.
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the interpreter must be chosen before triton is first imported
if "--cpu-smoke" in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import header, parser, write_json
from flopkb.kernelpkg import load_op
from flopkb.verify.machine import fingerprint

MLA_BENCH, MLA_COST, MLA_STEP = (load_op("mla", m) for m in ("bench", "cost", "step"))
MLA_REF = load_op("mla", "reference")
MOE_BENCH, MOE_COST, MOE_FWD = (load_op("moe", m) for m in ("bench", "cost", "forward"))

ROUNDS = 3
WIDE = False  # --wide
# --wide's row of the bundled step at its own default config, beside the sweep's fastest
DEFAULT_IMPL = "bundled_default_config"
BUDGET_MS = 25.0  # device time per (implementation, method, round)
REL_BOUND = 2e-2  # bf16 outputs against the float32 check
# The H200 copy bandwidth issue 24 quotes (read + write): the ceiling of --cpu-smoke's floors,
# which time nothing; a GPU run measures its own and prints both.
NOMINAL_COPY_GBPS = 4300.0
# torch_naive materialises per-head K and V: skipped above this many bytes of them
NAIVE_MAX_BYTES = 32e9
# sdpa_latent and torch_naive take tens of ms a call at 1M tokens: capped by total cached tokens
SLOW_PEER_MAX_TOKENS = 1 << 20
MLA_SWEEP = [
    MLA_STEP.MLAConfig(block_n=32, num_warps=8, num_stages=3, heads_as_n=True),
    MLA_STEP.MLAConfig(block_n=64, num_warps=8, num_stages=2, heads_as_n=True),
    MLA_STEP.MLAConfig(block_n=32, num_warps=8, num_stages=2, heads_as_n=True),
    MLA_STEP.MLAConfig(block_n=32, num_warps=8, num_stages=2, heads_as_n=False),
    MLA_STEP.MLAConfig(block_n=16, num_warps=4, num_stages=3, heads_as_n=False),
]
# --wide: the grid around the default (issue 24: the MLA kernel sits at 0.29-0.50 of its floor
# with the 5 configs above); 36 configs, each compiled once (the split count is not specialised)
MLA_WIDE_SWEEP = [MLA_STEP.MLAConfig(block_n=n, num_warps=w, num_stages=st, heads_as_n=True,
                                     programs_per_sm=p)
                  for n in (32, 64, 128) for w in (4, 8) for st in (2, 3, 4) for p in (1, 2)]
MOE_SWEEP = [MOE_FWD.MoEConfig(), MOE_FWD.MoEConfig(block_k=64, num_stages=6),
             MOE_FWD.MoEConfig(num_warps=8)]


def log(msg: str) -> None:
    print(msg, flush=True)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    o = out.float()
    if not torch.isfinite(o).all():
        return math.inf
    return ((o - ref.float()).norm() / ref.float().norm()).item()


# ------------------------------------------------------------------------------------ timing


def _per_call(run: Callable[[], Any], calls_per_run: int, budget_ms: float) -> float:
    """ms per call of `run` (which makes `calls_per_run` calls): one run sizes the count, then
    `count` runs back to back between two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    count = max(3, min(500, int(budget_ms / max(start.elapsed_time(end), 1e-3))))
    start.record()
    for _ in range(count):
        run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (count * calls_per_run)


def graph_ms(fn: Callable[..., Any], sets: list[dict], budget_ms: float) -> float:
    """One CUDA graph holding one call per input set, replayed back to back."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for kw in sets:
            fn(**kw)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for kw in sets:
            fn(**kw)
    graph.replay()
    try:
        return _per_call(graph.replay, len(sets), budget_ms)
    finally:
        del graph


def eager_ms(fn: Callable[..., Any], sets: list[dict], budget_ms: float) -> float:
    """Back-to-back eager calls cycling the input sets (never one call between two events)."""
    fn(**sets[0])
    torch.cuda.synchronize()

    def run() -> None:
        for kw in sets:
            fn(**kw)

    return _per_call(run, len(sets), budget_ms)


def measure_copy_gbps() -> float:
    """Read + write bytes per second of a 1 GiB device-to-device copy, back-to-back eager calls
    (device-bound at 0.5 ms a call). Not a graph replay: captured, a copy becomes a memcpy node
    that runs at about 0.64 of the eager copy's bandwidth on an H200 (flopkb's calibration
    evidence ev-calibration-h200-sxm-20261204t004032z vs t005307z), which would set the floor
    too low and every fraction too high."""
    src = torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    ms = eager_ms(lambda a, b: b.copy_(a), [{"a": src, "b": dst}], 50.0)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * (1 << 30) / (ms * 1e-3) / 1e9


# ------------------------------------------------------------------------------ one shape


class Shape:
    """The implementations of one shape, checked, then timed in interleaved rounds."""

    def __init__(self, section: str, shape: dict[str, Any], sets: list[dict], check: torch.Tensor,
                 nbytes: float, flops: float, gbps: float | None, smoke: bool) -> None:
        self.section, self.shape, self.sets, self.check = section, shape, sets, check
        self.nbytes, self.flops, self.gbps, self.smoke = nbytes, flops, gbps, smoke
        self.impls: list[dict[str, Any]] = []

    def add(self, impl: str, fn: Callable[..., Any], *, graph: bool = True, **info: Any) -> None:
        row: dict[str, Any] = {"section": self.section, **self.shape, "impl": impl,
                               "capturable": graph, "bytes": self.nbytes, "flops": self.flops,
                               "graph_ms": None, "eager_ms": None, **info}
        try:
            err = rel_err(fn(**self.sets[0]), self.check)
            row.update(rel_err=err, correct=err <= REL_BOUND)
        except Exception as exc:  # a failing implementation is recorded, the run goes on
            row.update(correct=False, error=f"{type(exc).__name__}: {str(exc)[:300]}")
        if not row["correct"]:
            why = row.get("error") or f"rel_err {row['rel_err']:.2e}"
            log(f"  {impl}: NOT TIMED ({why})")
        self.impls.append({"row": row, "fn": fn})

    def skip(self, impl: str, reason: str) -> None:
        self.impls.append({"row": {"section": self.section, **self.shape, "impl": impl,
                                   "skipped": reason, "graph_ms": None, "eager_ms": None},
                           "fn": None})

    def time(self) -> list[dict[str, Any]]:
        live = [i for i in self.impls if i["fn"] is not None and i["row"]["correct"]]
        if not self.smoke:
            for _ in range(ROUNDS):
                for item in live:
                    row, fn = item["row"], item["fn"]
                    methods = (("graph", graph_ms), ("eager", eager_ms))
                    for method, timer in methods:
                        if method == "graph" and not row["capturable"]:
                            continue
                        try:
                            row.setdefault(f"{method}_rounds", []).append(
                                timer(fn, self.sets, BUDGET_MS))
                        except Exception as exc:
                            row[f"{method}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                            torch.cuda.synchronize()
                    torch.cuda.empty_cache()
        floor_ms = self.nbytes / ((self.gbps or NOMINAL_COPY_GBPS) * 1e9) * 1e3
        for item in self.impls:
            row = item["row"]
            row["floor_ms"] = floor_ms
            for method in ("graph", "eager"):
                samples = row.get(f"{method}_rounds")
                if samples:
                    ms = statistics.median(samples)
                    row[f"{method}_ms"] = ms
                    row[f"{method}_gbps"] = self.nbytes / (ms * 1e-3) / 1e9
                    row[f"{method}_floor_frac"] = floor_ms / ms
                    row[f"{method}_tflops"] = self.flops / (ms * 1e-3) / 1e12
        return [i["row"] for i in self.impls]


def sweep(shape: Shape, configs: list, make_fn: Callable[[Any], Callable[..., Any]],
          describe: Callable[[Any], dict]) -> tuple[Any, list[dict]]:
    """Check each config, time the correct ones once (graph replay), return the fastest."""
    tried: list[dict[str, Any]] = []
    best, best_ms = configs[0], math.inf
    for cfg in configs:
        entry: dict[str, Any] = {"config": describe(cfg)}
        try:
            fn = make_fn(cfg)
            err = rel_err(fn(**shape.sets[0]), shape.check)
            entry["rel_err"] = err
            if err <= REL_BOUND and not shape.smoke:
                entry["graph_ms"] = graph_ms(fn, shape.sets, BUDGET_MS / 2)
                if entry["graph_ms"] < best_ms:
                    best, best_ms = cfg, entry["graph_ms"]
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        tried.append(entry)
    return best, tried


# -------------------------------------------------------------------------------------- MLA


def bench_mla(rows: list[dict[str, Any]], shapes: list[tuple[int, int]], dims: dict[str, int],
              device: torch.device, gbps: float | None, smoke: bool, quick: bool) -> None:
    for batch, context in shapes:
        log(f"MLA B={batch} context={context}")
        sets = [MLA_BENCH.make_inputs(batch, context, device=device, seed=0, **dims)]
        sets.append(MLA_BENCH.make_inputs(batch, context, device=device, seed=1,
                                          cache=sets[0]["cache"], **dims))
        tokens = batch * context
        check = MLA_REF.mla_decode_absorbed(**sets[0])
        shape = Shape("mla", {"batch": batch, "context": context, **dims}, sets, check,
                      MLA_COST.nbytes(batch, tokens, **dims), MLA_COST.flops(batch, tokens, **dims),
                      gbps, smoke)

        def with_config(cfg):
            return functools.partial(MLA_BENCH.bundled, config=cfg)

        configs = MLA_WIDE_SWEEP if WIDE else MLA_SWEEP[:2] if quick else MLA_SWEEP
        best, tried = sweep(shape, configs, with_config, lambda c: c.__dict__)
        splits = MLA_STEP.default_splits(batch, context, best, device)
        default = MLA_STEP.default_config(device)
        shape.add("bundled", with_config(best), config=best.__dict__, splits=splits, sweep=tried,
                  default_config=default.__dict__,
                  workspace_bytes=MLA_COST.workspace_bytes(batch, dims["heads"], splits,
                                                           rank=dims["rank"]))
        if WIDE and best != default:
            # the config the step picks itself, timed in the same interleaved rounds as the
            # sweep's fastest (the sweep times each config once)
            shape.add(DEFAULT_IMPL, with_config(default), config=default.__dict__)
        for name, peer in MLA_BENCH.PEERS.items():
            expanded = MLA_BENCH.expanded_bytes(batch, context, **dims)
            if name == "torch_naive" and expanded > NAIVE_MAX_BYTES:
                shape.skip(name, f"expands {expanded / 1e9:.1f} GB of per-head K/V "
                                 f"(> {NAIVE_MAX_BYTES / 1e9:.0f} GB)")
            elif name != "torch_absorbed" and tokens > SLOW_PEER_MAX_TOKENS and not smoke:
                shape.skip(name, f"{tokens} cached tokens > {SLOW_PEER_MAX_TOKENS} "
                                 "(tens of ms a call; kept out of the time budget)")
            else:
                shape.add(name, functools.partial(peer, full=True))
        rows += shape.time()
        del sets, shape, check
        if device.type == "cuda":
            torch.cuda.empty_cache()
        flush()


# -------------------------------------------------------------------------------------- MoE


def bench_moe(rows: list[dict[str, Any]], models: dict[str, dict[str, int]],
              token_counts: list[int], device: torch.device, gbps: float | None, smoke: bool,
              quick: bool) -> None:
    for model, dims in models.items():
        weights = [MOE_BENCH.make_weights(device=device, seed=s, **dims) for s in (0, 1)]
        for tokens in token_counts:
            log(f"MoE {model} T={tokens}")
            sets = [{**weights[s], **MOE_BENCH.make_routing(tokens, device=device, seed=10 + s,
                                                            **dims)} for s in (0, 1)]
            active = [MOE_COST.active_experts(kw["expert_ids"], dims["experts"]) for kw in sets]
            mean_active = sum(active) / len(active)
            nbytes = MOE_COST.nbytes(tokens, dims["top_k"], dims["d_model"], dims["ffn"],
                                     mean_active, shared=dims["shared"])
            flops = MOE_COST.flops(tokens, dims["top_k"], dims["d_model"], dims["ffn"],
                                   shared=dims["shared"])
            check = MOE_BENCH.moe_grouped_fp32(**sets[0])
            info = {"model": model, "tokens": tokens, **dims, "active_experts": active,
                    "expected_active": MOE_COST.expected_active(dims["experts"], tokens,
                                                                dims["top_k"])}
            shape = Shape("moe", info, sets, check, nbytes, flops, gbps, smoke)

            def resolved(cfg, tokens=tokens, dims=dims):
                return MOE_FWD.pick_config(tokens, dims["top_k"], dims["experts"],
                                           dims["shared"], dims["d_model"], dims["ffn"],
                                           device, cfg).__dict__

            def with_config(cfg):
                return functools.partial(MOE_BENCH.bundled, config=cfg)

            best, tried = sweep(shape, MOE_SWEEP[:1] if quick else MOE_SWEEP, with_config,
                                resolved)
            shape.add("bundled", with_config(best), config=resolved(best), sweep=tried)
            for name, (peer, capturable) in MOE_BENCH.PEERS.items():
                if name == "torch_grouped_mm" and not MOE_BENCH.grouped_mm_available():
                    shape.skip(name, "torch has no _grouped_mm")
                    continue
                shape.add(name, peer, graph=capturable)
            rows += shape.time()
            del sets, shape, check
            if device.type == "cuda":
                torch.cuda.empty_cache()
            flush()
        del weights


# ------------------------------------------------------------------------------------ output

RESULTS: dict[str, Any] = {}
OUT: list[Path] = []


def flush() -> None:
    """Write what is measured so far (a run cut short keeps its shapes)."""
    for path in OUT:
        write_json(path, RESULTS)


def _fmt(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.4f}"


def table(rows: list[dict[str, Any]], gbps: float | None) -> str:
    ceiling = (f"{gbps:.0f} GB/s measured copy" if gbps
               else f"{NOMINAL_COPY_GBPS:.0f} GB/s nominal (no GPU: nothing timed)")
    lines = [f"floor = minimum bytes / {ceiling}; bundled: graph replay (GB/s, frac = floor / "
             "time) and eager; x = best peer (faster of its graph/eager) / bundled graph",
             f"{'shape':<34} {'floor ms':>9} {'bundled ms':>11} {'GB/s':>7} {'frac':>6} "
             f"{'eager ms':>9} {'best peer':>17} {'peer ms':>9} {'x':>6}"]
    shapes: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        key = (f"mla B={r['batch']} L={r['context']}" if r["section"] == "mla"
               else f"moe {r['model']} T={r['tokens']}")
        shapes.setdefault(key, []).append(r)
    for key, group in shapes.items():
        ours = next((r for r in group if r["impl"] == "bundled"), {})
        peers = [r for r in group if not r["impl"].startswith("bundled")]

        def best_ms(r: dict[str, Any]) -> float:
            vals = [v for v in (r.get("graph_ms"), r.get("eager_ms")) if v is not None]
            return min(vals) if vals else math.inf

        best = min(peers, key=best_ms, default={})
        peer_ms = best_ms(best) if best else math.inf
        peer_name = best.get("impl", "-") if peer_ms < math.inf else "-"
        mine = ours.get("graph_ms")
        speed = f"{peer_ms / mine:.2f}" if mine and peer_ms < math.inf else "-"
        frac = ours.get("graph_floor_frac")
        gb = ours.get("graph_gbps")
        lines.append(
            f"{key:<34} {ours.get('floor_ms', math.nan):>9.4g} {_fmt(mine):>11} "
            f"{'-' if gb is None else f'{gb:.0f}':>7} {'-' if frac is None else f'{frac:.2f}':>6} "
            f"{_fmt(ours.get('eager_ms')):>9} {peer_name:>17} "
            f"{_fmt(peer_ms if peer_ms < math.inf else None):>9} {speed:>6}"
            + ("" if ours.get("correct", False) else "  BUNDLED NOT CORRECT"))
    return "\n".join(lines)


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="2 shapes per section and model, 1 round, 2 MLA configs, 1 MoE one")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny shapes through the Triton interpreter: checks, no timing")
    ap.add_argument("--sections", default="mla,moe", help="comma list of mla, moe")
    ap.add_argument("--wide", action="store_true",
                    help="MLA: the 36-config grid (block_n x warps x stages x programs per SM) "
                         "at B=1 128K, B=1 1M and B=8 1M")
    args = ap.parse_args()
    global ROUNDS, WIDE
    WIDE = args.wide
    smoke = args.cpu_smoke
    if not smoke and not torch.cuda.is_available():
        log("no CUDA device: run with --cpu-smoke for the interpreter checks")
        return 2
    device = torch.device("cpu" if smoke else "cuda")
    if args.quick:
        ROUNDS = 1
    if args.out:
        OUT.append(args.out)
    sections = {s.strip() for s in args.sections.split(",") if s.strip()}
    RESULTS.update(fingerprint=fingerprint(), **header(), rounds=ROUNDS, smoke=smoke,
                   method={"graph": "one CUDA graph over 2 input sets, N replays / 2N calls",
                           "eager": "N back-to-back calls over 2 input sets between 2 events",
                           "budget_ms": BUDGET_MS, "rel_bound": REL_BOUND},
                   mla=[], moe=[])
    started = time.perf_counter()
    gbps = None if smoke else measure_copy_gbps()
    RESULTS["copy_gbps"] = gbps
    RESULTS["nominal_copy_gbps"] = NOMINAL_COPY_GBPS
    if gbps:
        log(f"copy bandwidth {gbps:.0f} GB/s (read + write)")
    if smoke:
        mla_dims = {"heads": 4, "rank": 32, "rope": 16, "nope": 16, "v_dim": 16}
        mla_shapes = [(2, 96)]
        moe_models = {"tiny": {"d_model": 32, "experts": 6, "top_k": 2, "shared": 1, "ffn": 16}}
        moe_tokens = [3]
    else:
        mla_dims = MLA_BENCH.KIMI
        k = 1024
        mla_shapes = ([(1, 128 * k), (1, 1024 * k), (8, 1024 * k)] if args.wide else
                      [(1, 128 * k), (8, 1024 * k)] if args.quick else
                      [(b, c * k) for c in (128, 512, 1024) for b in (1, 4, 8)])
        moe_models = {"kimi": MOE_BENCH.KIMI, "mixtral": MOE_BENCH.MIXTRAL}
        moe_tokens = [1, 64] if args.quick else [1, 8, 64]
    try:
        if "mla" in sections:
            bench_mla(RESULTS["mla"], mla_shapes, mla_dims, device, gbps, smoke, args.quick)
        if "moe" in sections:
            bench_moe(RESULTS["moe"], moe_models, moe_tokens, device, gbps, smoke, args.quick)
    except Exception:
        traceback.print_exc()
        RESULTS["aborted"] = traceback.format_exc(limit=5)
    RESULTS["wall_s"] = time.perf_counter() - started
    flush()
    log(table(RESULTS["mla"] + RESULTS["moe"], gbps))
    log(f"wall {RESULTS['wall_s']:.1f} s" + (f"; JSON in {args.out}" if args.out else ""))
    return 1 if "aborted" in RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
