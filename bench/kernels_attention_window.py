"""Sliding-window attention prefill and split-KV decode on one GPU, beside their peers.

    python bench/kernels_attention_window.py --out PATH [--quick] [--only prefill,decode]
        [--flex-mode default|max-autotune-no-cudagraphs]
    python bench/kernels_attention_window.py --cpu-smoke [--out PATH]

One process, in this order: the ceilings (device-to-device copy, bytes read + written; cuBLAS
bf16 8192^3), then per shape: build the inputs (more sets when one would sit in the 60 MB L2),
check every implementation's output on the timed inputs against the fp32 reference (a wrong one
is never timed), and time all of them in 3 interleaved rounds; the figure is the median of the
rounds' medians. Decode steps are timed by CUDA-graph replay (`time_cuda`: calls captured back to
back in one graph, replays between two events, divided by the calls); prefill by back-to-back
eager launches (each call runs 1-500 ms, so host launch time is lost in it).

Prefill, Samba's sliding-window layer (32 query / 4 KV heads x 64, window 2048; B = 1):
  triton_window      window.window_attention (ours; autotuned, house layout [B, T, H, D])
  flex_window        torch flex_attention + create_block_mask(causal & q - kv < W), GQA,
                     torch.compile'd, in its own [B, H, T, D] layout (copies made before timing)
  sdpa_chunked_mask  the landed serving method: queries in blocks of W against 2W keys with a
                     band mask, SDPA efficient backend, K/V repeated for GQA
  sdpa_flash_causal  SDPA flash, full causal (T^2/2 pairs): a reference, not a window peer
Decode, one token per sequence against a cache (lengths on the device):
  triton_split_kv    split_kv.split_kv_decode (ours)
  sdpa_<backend>     SDPA with a one-token query over the cache slice, enable_gqa, for each of
                     flash / efficient / cudnn that accepts it (refusals are recorded)

The floor is max(FLOPs / cuBLAS bf16, bytes / copy bandwidth), both measured in this run; bytes
are each input read once and the output written once (kernels/attention/cost.py). Prints a table
last and writes JSON (machine fingerprint, every timing) to --out (a .json file, or a folder that
gets attention_window_<gpu>.json), rewritten after each row so a run cut short keeps its rows.
--cpu-smoke runs tiny shapes through TRITON_INTERPRET=1 with eager peers and no timing: it checks
the plumbing, the peers' masks and the checks, not speed.
"""

from __future__ import annotations

import os
import sys

if "--cpu-smoke" in sys.argv:
    # must precede the first triton import
    os.environ["TRITON_INTERPRET"] = "1"

import argparse
import datetime as dt
import json
import math
import statistics
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flopkb.kernelpkg import load_op  # noqa: E402
from flopkb.verify.machine import fingerprint  # noqa: E402

window = load_op("attention", "window")
split_kv = load_op("attention", "split_kv")
ref = load_op("attention", "reference")
cost = load_op("attention", "cost")

ROUNDS = 3
# inputs are rotated until the sets hold this much: twice the H200's 60 MB L2
ROTATE_BYTES = 120e6
MAX_SETS = 64
REL_BOUND = 2e-2  # bf16 q, k, v, p and o against the fp32 reference
# prefill outputs are checked on their first and last CHECK_ROWS rows (--cpu-smoke: fewer)
CHECK_ROWS = 1024
SAMBA = {"hq": 32, "hkv": 4, "d": 64, "window": 2048}   # records/architectures/samba-1-7b.yaml
GQA_8B = {"hq": 32, "hkv": 8, "d": 128}   # llama-3-1-8b.yaml, nemotron-h-8b.yaml
GQA_56B = {"hq": 64, "hkv": 8, "d": 128}  # nemotron-h-56b.yaml
FULL = {"prefill": (16384, 65536, 131072),
        "decode": [(GQA_8B, None, c, b) for c in (4096, 65536, 524288) for b in (1, 8)]
        + [(GQA_56B, None, 65536, 1)]
        + [(SAMBA, SAMBA["window"], 65536, b) for b in (1, 8)]}
QUICK = {"prefill": (16384,),
         "decode": [(GQA_8B, None, c, 1) for c in (4096, 65536)]
         + [(SAMBA, SAMBA["window"], 65536, 1)]}
SMOKE_HEADS = {"hq": 4, "hkv": 2, "d": 16}
SMOKE = {"prefill": (150,), "prefill_window": 40,
         "decode": [(SMOKE_HEADS, None, 300, 2), (SMOKE_HEADS, 64, 300, 2)]}

ROWS: list[dict[str, Any]] = []
ERRORS: dict[str, str] = {}
META: dict[str, Any] = {}
OUT: list[Path] = []


def save() -> None:
    """Write everything so far, atomically (a run cut short keeps its rows)."""
    for path in OUT:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(META | {"rows": ROWS, "errors": ERRORS}, indent=1,
                                  default=str) + "\n")
        tmp.replace(path)


def rel_err(out: torch.Tensor, expected: torch.Tensor) -> float:
    return ((out.double() - expected.double()).norm() / expected.double().norm()).item()


def sets_for(nbytes: int) -> int:
    return 1 if nbytes >= ROTATE_BYTES else min(MAX_SETS, math.ceil(ROTATE_BYTES / nbytes))


# ---------- ceilings


def measure_ceilings(smoke: bool) -> dict[str, float]:
    if smoke:
        return {}
    from flopkb.verify.timing import time_cuda

    n = 8192
    mats = [(torch.randn(n, n, device="cuda").bfloat16(), torch.randn(n, n, device="cuda")
             .bfloat16()) for _ in range(2)]
    t_mm = time_cuda(torch.matmul, mats, warmup=3, reps=10, budget_ms=300.0)
    del mats
    numel = 2**28  # 1 GiB of fp32 each way: far past the L2
    src = torch.randn(numel, device="cuda")
    dst = torch.empty_like(src)
    t_copy = time_cuda(lambda s, d: d.copy_(s), [(src, dst)], warmup=3, reps=20, budget_ms=300.0,
                       graph=False)
    del src, dst
    torch.cuda.empty_cache()
    return {"bf16_flops": 2 * n**3 / (t_mm.median_ms * 1e-3),
            "copy_bytes_per_s": 2 * numel * 4 / (t_copy.median_ms * 1e-3),
            "bf16_timing_ms": t_mm.median_ms, "copy_timing_ms": t_copy.median_ms}


# ---------- prefill implementations


def chunked_mask_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, w: int,
                      backend: SDPBackend) -> torch.Tensor:
    """The landed serving path's method: q [B, L, H, E] in blocks of W against their block and
    the previous one (2W keys) under a band mask; k, v [B, L, G, E] repeated to H heads."""
    b, length, h, e = q.shape
    rep = h // k.shape[2]
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    n = -(-length // w)
    pad = n * w - length
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, 0, 0, pad)) for t in (q, k, v))
    qc, kc, vc = (t.view(b, n, w, h, e) for t in (q, k, v))
    k2 = torch.cat([F.pad(kc, (0, 0, 0, 0, 0, 0, 1, 0))[:, :-1], kc], dim=2)
    v2 = torch.cat([F.pad(vc, (0, 0, 0, 0, 0, 0, 1, 0))[:, :-1], vc], dim=2)
    i = torch.arange(w, device=q.device)[:, None]
    j = torch.arange(2 * w, device=q.device)[None, :]
    mask = ((j > i) & (j <= i + w)).expand(n, w, 2 * w).clone()
    mask[0, :, :w] = False  # the first block has no previous block
    with sdpa_kernel([backend]):
        o = F.scaled_dot_product_attention(
            qc.reshape(b * n, w, h, e).transpose(1, 2), k2.reshape(b * n, 2 * w, h, e)
            .transpose(1, 2), v2.reshape(b * n, 2 * w, h, e).transpose(1, 2),
            attn_mask=mask.repeat(b, 1, 1)[:, None])
    return o.transpose(1, 2).reshape(b, n * w, h, e)[:, :length]


def flex_impl(t: int, w: int, device: str, smoke: bool, mode: str) -> Callable[..., Any]:
    """flex_attention with a sliding-window block mask, on [B, H, T, D] inputs; the block mask
    is built once per shape (outside the timing, as a serving engine caches it)."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def sliding(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < w)

    mask = create_block_mask(sliding, None, None, t, t, device=device, _compile=not smoke)
    if smoke:
        # the unfused eager path is what a CPU smoke run wants (it checks the mask, not speed)
        import warnings

        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        fn = flex_attention
    elif mode == "default":
        fn = torch.compile(flex_attention, dynamic=False)
    else:
        fn = torch.compile(flex_attention, dynamic=False, mode=mode)

    def run(qh: torch.Tensor, kh: torch.Tensor, vh: torch.Tensor) -> torch.Tensor:
        return fn(qh, kh, vh, block_mask=mask, enable_gqa=True)

    return run


def prefill_impls(t: int, w: int, device: str, smoke: bool, flex_mode: str
                  ) -> dict[str, tuple[Callable[..., Any], str, dict[str, Any]]]:
    """name -> (fn, layout, info); layout "bthd" takes (q, k, v, out), "bhtd" takes (qh, kh, vh)."""
    impls: dict[str, tuple[Callable[..., Any], str, dict[str, Any]]] = {
        "triton_window": (lambda q, k, v, o: window.window_attention(q, k, v, window=w, out=o),
                          "bthd", {"role": "ours"}),
    }
    try:
        impls["flex_window"] = (flex_impl(t, w, device, smoke, flex_mode), "bhtd",
                                {"role": "peer", "mode": "eager" if smoke else flex_mode})
    except Exception as exc:  # flex missing or failing to build its mask: say so, go on
        ERRORS[f"prefill T={t} flex_window"] = f"unavailable: {type(exc).__name__}: {exc}"
    masked_backend = SDPBackend.MATH if smoke else SDPBackend.EFFICIENT_ATTENTION
    impls["sdpa_chunked_mask"] = (
        lambda q, k, v, o: chunked_mask_sdpa(q, k, v, w, masked_backend), "bthd",
        {"role": "peer", "backend": "math" if smoke else "efficient"})
    causal_backend = SDPBackend.MATH if smoke else SDPBackend.FLASH_ATTENTION

    def causal(qh: torch.Tensor, kh: torch.Tensor, vh: torch.Tensor) -> torch.Tensor:
        with sdpa_kernel([causal_backend]):
            return F.scaled_dot_product_attention(qh, kh, vh, is_causal=True, enable_gqa=True)

    impls["sdpa_flash_causal"] = (causal, "bhtd", {"role": "reference (full causal)",
                                                   "backend": "math" if smoke else "flash"})
    return impls


def prefill_check(out_bthd: torch.Tensor, q, k, v, w: int | None) -> float:
    """Relative error on the first and the last CHECK_ROWS rows, query heads of KV head 0, against
    the fp32 reference of the sub-sequence those rows see (the full T x T one would not fit)."""
    t, rep = q.shape[1], q.shape[2] // k.shape[2]
    rows = min(CHECK_ROWS, t)
    heads = slice(0, rep)
    first = ref.window_attention_reference(q[:1, :rows, heads], k[:1, :rows, :1],
                                           v[:1, :rows, :1], window=w)
    errs = [rel_err(out_bthd[:1, :rows, heads], first)]
    if w is not None and t > rows:
        lo = max(0, t - rows - w)
        last = ref.window_attention_reference(q[:1, lo:, heads], k[:1, lo:, :1],
                                              v[:1, lo:, :1], window=w)
        errs.append(rel_err(out_bthd[:1, -rows:, heads], last[:, -rows:]))
    return max(errs)


# ---------- timing and records


def time_one(fn: Callable[..., Any], sets: list[tuple[Any, ...]], decode: bool, slow: bool,
             ours: bool):
    from flopkb.verify.timing import time_cuda

    if decode:
        # ours must capture (the claim is a graph-capturable step); a peer that cannot is timed
        # as an eager loop and its timing says so (method "loop", note)
        return time_cuda(fn, sets, warmup=5, reps=50, budget_ms=200.0, graph=True,
                         require_graph=ours)
    return time_cuda(fn, sets, warmup=1 if slow else 3, reps=5 if slow else 20,
                     budget_ms=150.0, graph=False)


def record(section: str, shape: dict[str, Any], name: str, info: dict[str, Any],
           rounds: list[Any], check: float | None, flops: int, nbytes: int,
           ceilings: dict[str, float]) -> dict[str, Any]:
    row: dict[str, Any] = {"section": section, "shape": shape, "impl": name, **info,
                           "flops": flops, "bytes": nbytes,
                           "check": {"rel_err": check, "bound": REL_BOUND}}
    if rounds:
        medians = [r.median_ms for r in rounds]
        ms = statistics.median(medians)
        floor_s = max(flops / ceilings["bf16_flops"], nbytes / ceilings["copy_bytes_per_s"])
        row |= {"median_ms": ms, "round_medians_ms": medians,
                "timings": [r.as_dict() for r in rounds],
                "tflops": flops / (ms * 1e-3) / 1e12, "gbs": nbytes / (ms * 1e-3) / 1e9,
                "floor_ms": floor_s * 1e3, "floor_fraction": floor_s / (ms * 1e-3),
                "bound": ("compute" if flops / ceilings["bf16_flops"]
                          >= nbytes / ceilings["copy_bytes_per_s"] else "memory")}
    ROWS.append(row)
    save()
    return row


def run_rounds(impls: dict[str, tuple[Callable[..., Any], list[tuple[Any, ...]]]],
               decode: bool, slow: set[str]) -> dict[str, list[Any]]:
    """ROUNDS interleaved rounds over the implementations; a failing one is dropped, recorded."""
    out: dict[str, list[Any]] = {name: [] for name in impls}
    for _ in range(ROUNDS):
        for name, (fn, sets) in impls.items():
            if out[name] is None:
                continue
            try:
                out[name].append(time_one(fn, sets, decode, name in slow,
                                           name.startswith("triton_")))
            except Exception as exc:
                traceback.print_exc()
                ERRORS[f"{name} timing"] = f"{type(exc).__name__}: {exc}"
                out[name] = None
    return {name: r or [] for name, r in out.items()}


def bench_prefill(size: dict[str, Any], ceilings: dict[str, float], smoke: bool,
                  flex_mode: str, device: str) -> None:
    heads = SMOKE_HEADS if smoke else SAMBA
    hq, hkv, d = heads["hq"], heads["hkv"], heads["d"]
    w = size.get("prefill_window", SAMBA["window"])
    for t in size["prefill"]:
        shape = {"B": 1, "T": t, "Hq": hq, "Hkv": hkv, "D": d, "window": w, "dtype": "bf16"}
        nbytes = cost.window_bytes(1, t, hq, hkv, d)
        sets = []
        for _ in range(sets_for(nbytes)):
            q = torch.randn(1, t, hq, d, device=device).bfloat16()
            k = torch.randn(1, t, hkv, d, device=device).bfloat16()
            v = torch.randn(1, t, hkv, d, device=device).bfloat16()
            sets.append((q, k, v, torch.full_like(q, float("nan"))))
        # each peer in its own layout, made once before any timing
        sets_bhtd = [tuple(x.transpose(1, 2).contiguous() for x in s[:3]) for s in sets]
        impls = prefill_impls(t, w, device, smoke, flex_mode)
        timed: dict[str, tuple[Callable[..., Any], list[tuple[Any, ...]]]] = {}
        checks: dict[str, float] = {}
        for name, (fn, layout, _) in impls.items():
            try:
                args = sets if layout == "bthd" else sets_bhtd
                o = fn(*args[0])
                o = o if layout == "bthd" else o.transpose(1, 2)
                err = prefill_check(o, *sets[0][:3], None if "causal" in name else w)
                checks[name] = err
                if not err < REL_BOUND:
                    raise AssertionError(f"{name} wrong at T={t}: rel err {err:.3g}")
                timed[name] = (fn, args)
            except Exception as exc:
                traceback.print_exc()
                ERRORS[f"prefill T={t} {name}"] = f"{type(exc).__name__}: {exc}"
        rounds = {} if smoke else run_rounds(timed, False, {"sdpa_flash_causal"})
        for name, (_, _, info) in impls.items():
            causal = "causal" in name
            extra = dict(info)
            if name == "triton_window" and not smoke:
                extra["config"] = window.best_config()
            record("prefill", shape, name, extra, rounds.get(name, []), checks.get(name),
                   cost.window_flops(1, t, hq, d, window=None if causal else w), nbytes,
                   ceilings)
        del sets, sets_bhtd, timed
        if device == "cuda":
            torch.cuda.empty_cache()


# ---------- decode


def sdpa_decode(backend: SDPBackend, w: int | None) -> Callable[..., Any]:
    def run(q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, lens: torch.Tensor,
            o: torch.Tensor) -> torch.Tensor:
        # the host knows every length here (uniform batch): the slice SDPA needs is static
        length = kc.shape[1]
        lo = 0 if w is None else max(0, length - w)
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(
                q[:, :, None, :], kc[:, lo:length].transpose(1, 2),
                vc[:, lo:length].transpose(1, 2), enable_gqa=True)[:, :, 0, :]
    return run


def bench_decode(size: dict[str, Any], ceilings: dict[str, float], smoke: bool,
                 device: str) -> None:
    backends = ({"math": SDPBackend.MATH} if smoke else
                {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                 "cudnn": SDPBackend.CUDNN_ATTENTION})
    for heads, w, context, b in size["decode"]:
        hq, hkv, d = heads["hq"], heads["hkv"], heads["d"]
        shape = {"B": b, "context": context, "Hq": hq, "Hkv": hkv, "D": d, "window": w,
                 "dtype": "bf16"}
        nbytes = cost.split_kv_decode_bytes(b, hq, hkv, d, context, window=w)
        flops = cost.split_kv_decode_flops(b, hq, d, context, window=w)
        sets = []
        for _ in range(sets_for(nbytes)):
            kc = torch.randn(b, context, hkv, d, device=device).bfloat16()
            vc = torch.randn(b, context, hkv, d, device=device).bfloat16()
            q = torch.randn(b, hq, d, device=device).bfloat16()
            lens = torch.full((b,), context, dtype=torch.int32, device=device)
            sets.append((q, kc, vc, lens, torch.full_like(q, float("nan"))))
        q, kc, vc, lens, _ = sets[0]
        rows = slice(0, 2 * (hq // hkv))  # query heads of KV heads 0 and 1
        expected = ref.split_kv_decode_reference(q[:, rows], kc[:, :, :2], vc[:, :, :2], lens,
                                                 window=w)
        impls: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
            "triton_split_kv": (lambda q, kc, vc, lens, o, w=w: split_kv.split_kv_decode(
                q, kc, vc, lens, window=w, out=o),
                {"role": "ours", "num_splits": split_kv.splits_for(q, kc, window=w)}),
        }
        impls |= {f"sdpa_{name}": (sdpa_decode(be, w), {"role": "peer", "backend": name})
                  for name, be in backends.items()}
        timed, checks = {}, {}
        for name, (fn, info) in impls.items():
            try:
                err = rel_err(fn(*sets[0])[:, rows], expected)
                checks[name] = err
                if not err < REL_BOUND:
                    raise AssertionError(f"{name} wrong: rel err {err:.3g}")
                timed[name] = (fn, sets)
                info["accepted"] = True
            except Exception as exc:
                # an SDPA backend refusing a one-token GQA query is a finding, not a crash
                info["accepted"] = False
                info["refusal"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                if name == "triton_split_kv":
                    traceback.print_exc()
                    ERRORS[f"decode {shape} {name}"] = info["refusal"]
        rounds = {} if smoke else run_rounds(timed, True, set())
        for name, (_, info) in impls.items():
            record("decode", shape, name, info, rounds.get(name, []), checks.get(name), flops,
                   nbytes, ceilings)
        del sets, timed
        if device == "cuda":
            torch.cuda.empty_cache()


# ---------- report


def summarize() -> list[dict[str, Any]]:
    """Per shape: ours, the fastest peer, their ratio, the floor fraction and the targets."""
    out = []
    shapes: dict[str, list[dict[str, Any]]] = {}
    for row in ROWS:
        shapes.setdefault(json.dumps([row["section"], row["shape"]]), []).append(row)
    for rows in shapes.values():
        ours = next((r for r in rows if r.get("role") == "ours" and "median_ms" in r), None)
        if ours is None:
            continue
        section = ours["section"]
        want = "flex_window" if section == "prefill" else "sdpa_"
        peers = [r for r in rows if r["impl"].startswith(want) and "median_ms" in r]
        best = min(peers, key=lambda r: r["median_ms"], default=None)
        entry = {"section": section, "shape": ours["shape"], "ours_ms": ours["median_ms"],
                 "floor_fraction": ours["floor_fraction"],
                 "peer": best and best["impl"], "peer_ms": best and best["median_ms"],
                 "ratio_vs_peer": best and ours["median_ms"] / best["median_ms"]}
        if section == "prefill":
            entry["target"] = "<= 1.1x flex_window"
            entry["met"] = best is not None and entry["ratio_vs_peer"] <= 1.1
        else:
            entry["target"] = ">= 0.5 of floor or <= 1.1x the best SDPA backend"
            entry["met"] = ours["floor_fraction"] >= 0.5 or (
                best is not None and entry["ratio_vs_peer"] <= 1.1)
        out.append(entry)
    return out


def print_table(ceilings: dict[str, float]) -> None:
    if ceilings:
        print(f"\nceilings (this run): copy {ceilings['copy_bytes_per_s'] / 1e9:.0f} GB/s, "
              f"cuBLAS bf16 {ceilings['bf16_flops'] / 1e12:.0f} TFLOP/s")
    print(f"{'section':<8}{'shape':<34}{'impl':<20}{'ms':>10}{'TFLOP/s':>9}{'GB/s':>7}"
          f"{'floor':>6}  check")
    for row in ROWS:
        s = row["shape"]
        shape = (f"T={s['T']} W={s['window']}" if row["section"] == "prefill" else
                 f"B={s['B']} ctx={s['context']} {s['Hq']}/{s['Hkv']}x{s['D']} W={s['window']}")
        err = row["check"]["rel_err"]
        check = "-" if err is None else f"{err:.1e}"
        if "median_ms" in row:
            print(f"{row['section']:<8}{shape:<34}{row['impl']:<20}{row['median_ms']:>10.4f}"
                  f"{row['tflops']:>9.1f}{row['gbs']:>7.0f}{row['floor_fraction']:>6.2f}  {check}")
        else:
            why = row.get("refusal") or ("untimed" if err is not None else "failed")
            print(f"{row['section']:<8}{shape:<34}{row['impl']:<20}{'-':>10}{'':>22}  {check}"
                  f" {why[:60]}")
    for entry in META.get("summary", []):
        s = entry["shape"]
        what = f"T={s['T']}" if entry["section"] == "prefill" else f"B={s['B']} ctx={s['context']}"
        ratio = "-" if entry["ratio_vs_peer"] is None else f"{entry['ratio_vs_peer']:.2f}x"
        print(f"{entry['section']:<8}{what:<22} ours/{entry['peer']}: {ratio}, floor "
              f"{entry['floor_fraction']:.2f}; target {entry['target']}: "
              f"{'met' if entry['met'] else 'MISSED'}")
    for name, message in ERRORS.items():
        print(f"ERROR {name}: {message[:200]}")


def out_paths(arg: Path | None, smoke: bool) -> list[Path]:
    gpu = "cpu" if smoke else torch.cuda.get_device_name().lower().replace("nvidia ", "")
    name = f"attention_window_{gpu.replace(' ', '-')}.json"
    if arg is None:
        env = os.environ.get("OUT")
        return [Path(env) / name] if env else []
    return [arg if arg.suffix == ".json" else arg / name]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="fewer shapes (a smoke run)")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="tiny shapes through TRITON_INTERPRET=1, no timing")
    parser.add_argument("--only", default="", help="comma-separated: prefill, decode")
    parser.add_argument("--flex-mode", default="default",
                        choices=("default", "max-autotune-no-cudagraphs"),
                        help="torch.compile mode of the flex_attention peer")
    args = parser.parse_args()
    if not args.cpu_smoke and not torch.cuda.is_available():
        print("kernels_attention_window: needs a CUDA GPU (or --cpu-smoke)", file=sys.stderr)
        return 2
    began = time.perf_counter()
    torch.manual_seed(0)
    device = "cpu" if args.cpu_smoke else "cuda"
    if args.cpu_smoke:
        global CHECK_ROWS
        CHECK_ROWS = 64
    size = SMOKE if args.cpu_smoke else QUICK if args.quick else FULL
    OUT.extend(out_paths(args.out, args.cpu_smoke))
    META.update(benchmark="kernels_attention_window", command=sys.argv,
                timestamp=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                machine=fingerprint(), quick=args.quick, cpu_smoke=args.cpu_smoke,
                rounds=ROUNDS, flex_mode=args.flex_mode)
    ceilings = measure_ceilings(args.cpu_smoke)
    META["ceilings"] = ceilings
    only = {s for s in args.only.split(",") if s}
    for name, fn in (("prefill", lambda: bench_prefill(size, ceilings, args.cpu_smoke,
                                                       args.flex_mode, device)),
                     ("decode", lambda: bench_decode(size, ceilings, args.cpu_smoke, device))):
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # one broken section must not lose the other's rows
            traceback.print_exc()
            ERRORS[name] = f"{type(exc).__name__}: {exc}"
        META[f"{name}_seconds"] = time.perf_counter() - t0
    META["summary"] = summarize()
    META["seconds"] = time.perf_counter() - began
    save()
    print_table(ceilings)
    print(f"{META['seconds']:.0f} s" + "".join(f"; wrote {p}" for p in OUT))
    return 1 if ERRORS else 0


if __name__ == "__main__":
    raise SystemExit(main())
