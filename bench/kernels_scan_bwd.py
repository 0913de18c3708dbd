"""Selective scan forward, backward and forward+backward: every bundled variant beside Mamba's
CUDA kernel (`selective_scan_cuda.fwd/bwd`), same inputs, same run.

    python bench/kernels_scan_bwd.py --mamba-ext DIR [--out PATH] [--rounds 3] [--dims 2048,4096]
                                     [--dstates 16,64] [--calls plain,layer]
                                     [--family b8|paper]
    python bench/kernels_scan_bwd.py --smoke --out PATH     # CPU, TRITON_INTERPRET=1, tiny sizes

Shape families (--family): `b8` (default) B=8, T=4096; `paper` the Mamba-1 paper's scan benchmark
(Gu & Dao 2023, App. E.5): B=1, D=1024, N=16, T = 2^9 .. 2^19, for the target "forward <= 1.05x
Mamba's CUDA scan" at those shapes (not yet run: no GPU was lent when it was added; the float32
reference steps T sequentially, so the longest lengths take minutes each).

Per shape (B=8, T=4096, D in --dims, N in --dstates, bf16 u/delta/B/C/dy, fp32 A/D/bias) and
call ("plain": no softplus, no bias; "layer": delta_softplus with delta_bias, as a Mamba-1 layer
calls it; D skip in both): the float32 reference (reference.py on the upcast inputs) and its
torch.autograd gradients are computed once, over channel slices so its saved activations fit
(the loss sum(y*dy) is a sum over channels: dB and dC add up over slices, every other gradient
belongs to one slice); then every implementation is run once and checked (y and each gradient,
||a-b||/||b|| <= 1e-2: bf16 outputs round at 2^-9); a wrong or failing one gets no time. Timing:
--rounds interleaved rounds (each round times every implementation once, in turn), each a median
of device-event repetitions (flopkb.verify.timing.time_cuda); the figure is the median over rounds.

Timed items: `fwd` (the plain forward, no checkpoints: each FORWARD_VARIANTS entry),
`fwd_train` (the forward that saves checkpoints), `bwd` (the backward kernel from saved
checkpoints, including the partial sums) and `fwd+bwd` (torch.autograd.grad through
`selective_scan`) for each BACKWARD_VARIANTS entry; Mamba's `fwd`, `bwd` and `fwd+bwd`.
--mamba-ext DIR is a folder holding the compiled extension (`selective_scan_cuda*.so`, built by
the lead from the mamba-ssm sdist); without it, or when it fails to import or lacks `bwd`, the
peer is recorded as not-run with the reason. JSON (machine fingerprint, command, every check and
timing, cost-model FLOPs/bytes) goes to --out (default $OUT/scan_bwd.json when $OUT is set) and
is rewritten after every shape.
"""

from __future__ import annotations

import importlib
import math
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import comma_list, device_of, header, parser, unknown, write_json

NAMES = ("u", "delta", "A", "Bm", "Cm", "Dskip", "delta_bias")
BOUND = 1e-2
FAMILIES = {
    "b8": {"batch": 8, "steps": (4096,), "dims": (2048, 4096), "dstates": (16, 64)},
    "paper": {"batch": 1, "steps": tuple(2**k for k in range(9, 20)), "dims": (1024,),
              "dstates": (16,)},
}
# --smoke: tiny sizes of each family (the paper family keeps batch 1 and several lengths)
SMOKE = {"b8": {"batch": 1, "steps": (12,), "dims": (6,), "dstates": (4,)},
         "paper": {"batch": 1, "steps": (8, 16), "dims": (6,), "dstates": (4,)}}
# Reference slice: at most this many (batch x channel x state) elements per autograd pass,
# which keeps the reference's saved per-step tensors near 25 GB at T=4096 (~3 floats each).
REF_ELEMS = 1 << 19


def log(msg: str) -> None:
    print(msg, flush=True)


def rel_err(out, ref) -> float:
    o, r = out.float(), ref.float()
    if not bool(o.isfinite().all()):
        return math.inf
    return ((o - r).norm() / r.norm()).item()


def make_inputs(torch, batch: int, dim: int, steps: int, dstate: int, device: str, layer: bool):
    """bf16 activations in Mamba's layout; A log-uniform in [-16, -1]; delta as a layer feeds it
    (pre-softplus around -2 with a bias) or, without softplus, already positive."""
    bf = torch.bfloat16
    u = torch.randn(batch, dim, steps, device=device).to(bf)
    if layer:
        delta = (torch.randn(batch, dim, steps, device=device) * 0.5 - 2).to(bf)
    else:
        delta = (torch.rand(batch, dim, steps, device=device) * 0.1 + 0.01).to(bf)
    A = -torch.exp(torch.rand(dim, dstate, device=device) * math.log(16))
    Bm = torch.randn(batch, dstate, steps, device=device).to(bf)
    Cm = torch.randn(batch, dstate, steps, device=device).to(bf)
    Dskip = torch.randn(dim, device=device)
    bias = torch.randn(dim, device=device) * 0.1 if layer else None
    dy = torch.randn(batch, dim, steps, device=device).to(bf)
    return [u, delta, A, Bm, Cm, Dskip, bias], dy


def reference(torch, ref_fn, ins, softplus: bool, dy):
    """y and the gradients of sum(y * dy) in float32 on the upcast inputs, by channel slices."""
    batch, dim, _ = ins[0].shape
    dstate = ins[2].shape[1]
    step = max(1, min(dim, REF_ELEMS // (batch * dstate)))
    f32 = [t.float() if t is not None else None for t in ins]
    y = torch.empty_like(f32[0])
    grads = [torch.zeros_like(t) if t is not None else None for t in f32]
    for d0 in range(0, dim, step):
        sl = slice(d0, d0 + step)
        part = [f32[0][:, sl], f32[1][:, sl], f32[2][sl], f32[3], f32[4],
                f32[5][sl] if f32[5] is not None else None,
                f32[6][sl] if f32[6] is not None else None]
        leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in part]
        y_part = ref_fn(*leaves, softplus)
        y_part.backward(dy[:, sl].float())
        y[:, sl] = y_part.detach()
        for i, leaf in enumerate(leaves):
            if leaf is None:
                continue
            if i in (3, 4):
                grads[i] += leaf.grad
            else:
                grads[i][(slice(None), sl) if i < 2 else sl] = leaf.grad
        del leaves, y_part
    return y, grads


def load_mamba(path: str | None, module: str) -> tuple[Any, str]:
    """The compiled peer extension, or None and the reason it is not run."""
    if not path:
        return None, "not-run: no --mamba-ext given"
    folder = Path(path)
    if not folder.is_dir():
        return None, f"not-run: --mamba-ext {path} is not a folder"
    sys.path.insert(0, str(folder))
    try:
        ext = importlib.import_module(module)
    except Exception as exc:
        return None, f"not-run: import {module} from {path} failed ({type(exc).__name__}: {exc})"
    if not hasattr(ext, "bwd"):
        return None, f"not-run: {module} from {path} has no bwd (forward-only build)"
    return ext, f"{module} from {path}"


def mamba_calls(ext, ins, softplus: bool, dy) -> dict[str, Callable]:
    """Mamba's fwd (which also returns the state of every 2048-step chunk, its backward's input)
    and bwd. Later mamba-ssm versions added a trailing cu_seqlens argument: both arities are
    tried."""
    u, delta, A, Bm, Cm, Dskip, bias = ins
    b4, c4 = Bm.unsqueeze(1), Cm.unsqueeze(1)

    def fwd():
        try:
            return ext.fwd(u, delta, A, b4, c4, Dskip, None, bias, softplus)
        except TypeError:
            return ext.fwd(u, delta, A, b4, c4, Dskip, None, bias, softplus, None)

    def bwd(saved):
        out, x = saved[0], saved[1]
        args = (u, delta, A, b4, c4, Dskip, None, bias, dy, x, out, None, softplus, False)
        try:
            res = ext.bwd(*args)
        except TypeError:
            res = ext.bwd(*args, None)
        du, ddelta, dA, dB, dC, dD, dbias = res[:7]
        return [du, ddelta, dA, dB.squeeze(1), dC.squeeze(1), dD,
                dbias if bias is not None else None]

    saved = fwd()
    return {"fwd": fwd, "bwd": lambda: bwd(saved), "fwd+bwd": lambda: bwd(fwd()),
            "_check": lambda: (fwd()[0], bwd(fwd()))}


def our_calls(torch, scan, bwd_mod, ins, softplus: bool, dy, fwd_cfg, bwd_cfg):
    """Callables for one bundled variant: fwd (plain) or fwd_train / bwd / fwd+bwd."""
    if fwd_cfg is not None:
        def fwd():
            return scan.selective_scan(*ins, softplus, **fwd_cfg)
        return {"fwd": fwd, "_check": lambda: (fwd(), None)}
    k = bwd_cfg.get("ckpt_every", bwd_mod.DEFAULT_CKPT_EVERY)
    kw = {key: v for key, v in bwd_cfg.items() if key != "ckpt_every"}
    y = torch.empty_like(ins[0])
    fwd_opts = {"schedule": "sequential", "block_d": None, "block_d_scale": 1.0, "block_t": 16,
                "num_warps": None, "transpose_bc": True, "time_major": False, "unroll": 4,
                "sp_tile": softplus or ins[6] is not None}

    def fwd_train():
        return scan._launch_forward(*ins, softplus, y, **fwd_opts, ckpt_every=k)

    ckpt, (bt, ct) = fwd_train()

    def bwd():
        return bwd_mod.selective_scan_bwd(
            ins[0], ins[1], ins[2], bt, ct, ins[5], ins[6], softplus, dy, ckpt, ckpt_every=k,
            bc_time_major=True, bc_dtypes=(ins[3].dtype, ins[4].dtype), **kw)

    leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in ins]
    inputs = [t for t in leaves if t is not None]

    def fwd_bwd():
        out = scan.selective_scan(*leaves, softplus, backward=bwd_cfg)
        got = iter(torch.autograd.grad(out, inputs, dy))
        return out, [next(got) if t is not None else None for t in leaves]

    def check():
        out, grads = fwd_bwd()
        return out.detach(), grads

    return {"fwd_train": fwd_train, "bwd": bwd, "fwd+bwd": fwd_bwd, "_check": check}


def check(entry: dict, calls: dict, y_ref, grads_ref) -> bool:
    out, grads = calls["_check"]()
    errs = {"y": rel_err(out, y_ref)}
    if grads is not None:
        for name, got, ref in zip(NAMES, grads, grads_ref, strict=True):
            if ref is not None:
                errs[name] = rel_err(got, ref) if got is not None else math.inf
    entry["rel_err"] = errs
    entry["correct"] = all(e <= BOUND for e in errs.values())
    return entry["correct"]


def timer(torch, smoke: bool) -> Callable:
    if smoke:
        def cpu_time(fn):
            t0 = time.perf_counter()
            fn()
            return {"median_ms": (time.perf_counter() - t0) * 1e3, "method": "perf_counter"}
        return cpu_time
    from flopkb.verify.timing import time_cuda

    return lambda fn: time_cuda(lambda: fn(), [()], warmup=2, reps=15, budget_ms=150).as_dict()


def bench_shape(torch, mods, shape: dict, args, ext, peer_note: str) -> dict[str, Any]:
    scan, bwd_mod, ref_mod, cost = mods
    batch, dim, steps, dstate, layer = (shape[k] for k in ("B", "D", "T", "N", "layer"))
    ins, dy = make_inputs(torch, batch, dim, steps, dstate, args.device, layer)
    t0 = time.time()
    y_ref, grads_ref = reference(torch, ref_mod.selective_scan_reference, ins, layer, dy)
    log(f"  reference {time.time() - t0:.1f} s")
    entries: dict[str, dict[str, Any]] = {}
    impls: dict[str, dict[str, Callable]] = {}
    for name in args.fwd_variants:
        cfg = scan.FORWARD_VARIANTS[name]
        impls[f"ours:fwd:{name}"] = our_calls(torch, scan, bwd_mod, ins, layer, dy, cfg, None)
    for name in args.bwd_variants:
        cfg = bwd_mod.BACKWARD_VARIANTS[name]
        impls[f"ours:train:{name}"] = our_calls(torch, scan, bwd_mod, ins, layer, dy, None, cfg)
    if ext is not None:
        impls["mamba_cuda"] = mamba_calls(ext, ins, layer, dy)
    else:
        entries["mamba_cuda"] = {"verdict": peer_note}
    for key, calls in list(impls.items()):
        entry = entries.setdefault(key, {})
        try:
            if not check(entry, calls, y_ref, grads_ref):
                log(f"  {key}: WRONG {entry['rel_err']}")
                del impls[key]
        except Exception as exc:  # one failing implementation never stops the others
            entry.update(error=f"{type(exc).__name__}: {exc}", correct=False)
            log(f"  {key}: ERROR {entry['error'][:300]}")
            traceback.print_exc(limit=3)
            del impls[key]
    time_one = timer(torch, args.smoke)
    for r in range(args.rounds):
        # Interleaved: each round times every implementation once, starting at a rotated place.
        keys = list(impls)
        keys = keys[r % len(keys):] + keys[:r % len(keys)] if keys else keys
        for key in keys:
            for item, fn in impls[key].items():
                if item.startswith("_"):
                    continue
                rounds = entries[key].setdefault("rounds", {}).setdefault(item, [])
                rounds.append(time_one(fn))
    for entry in entries.values():
        entry["ms"] = {item: statistics.median(t["median_ms"] for t in ts)
                       for item, ts in entry.get("rounds", {}).items()}
    bd = bwd_mod.default_block_d(dim, dstate, None)
    k = bwd_mod.DEFAULT_CKPT_EVERY
    opts = {"has_d": True, "has_bias": layer}
    model = {
        "fwd_flops": cost.flops(batch, dim, steps, dstate, True, layer, layer),
        "fwd_bytes": cost.bytes_moved(batch, dim, steps, dstate, **opts),
        "bwd_flops": cost.backward_flops(batch, dim, steps, dstate, bd, True, layer, layer),
        "bwd_bytes_min": cost.backward_bytes_min(batch, dim, steps, dstate, **opts),
        "bwd_bytes": cost.backward_bytes(batch, dim, steps, dstate, bd, k, **opts),
        "bwd_l2_bytes": cost.backward_l2_bytes(batch, dim, steps, dstate),
        "train_flops": cost.training_flops(batch, dim, steps, dstate, bd, True, layer, layer),
        "train_bytes": cost.training_bytes(batch, dim, steps, dstate, bd, k, **opts),
        "block_d": bd, "ckpt_every": k,
    }
    return {"shape": shape, "impls": entries, "ratios": ratios(entries), "cost_model": model}


def ratios(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Best bundled time over Mamba's, per item (fwd: plain forward variants; fwd+bwd, bwd)."""
    peer = entries.get("mamba_cuda", {}).get("ms", {})
    out: dict[str, Any] = {}
    for item, prefix in (("fwd", "ours:fwd:"), ("bwd", "ours:train:"),
                         ("fwd+bwd", "ours:train:")):
        ours = {k: e["ms"][item] for k, e in entries.items()
                if k.startswith(prefix) and item in e.get("ms", {})}
        if not ours:
            continue
        best = min(ours, key=ours.get)
        out[item] = {"best": best, "best_ms": ours[best], "mamba_ms": peer.get(item),
                     "ratio": ours[best] / peer[item] if item in peer else None}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, rounds=3, smoke=True)
    ap.add_argument("--mamba-ext", default=None, help="folder with the compiled extension")
    ap.add_argument("--mamba-module", default="selective_scan_cuda")
    ap.add_argument("--dims", default="", help="comma-separated D values")
    ap.add_argument("--dstates", default="", help="comma-separated N values")
    ap.add_argument("--calls", default="plain,layer")
    ap.add_argument("--fwd-variants", default="", help="FORWARD_VARIANTS names (default all)")
    ap.add_argument("--bwd-variants", default="", help="BACKWARD_VARIANTS names (default all)")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="b8",
                    help="b8: B=8, T=4096; paper: B=1, D=1024, N=16, T=2^9..2^19 (App. E.5)")
    args = ap.parse_args(argv)
    args.device = device_of(args, "kernels_scan_bwd.py")
    if args.device is None:
        return 2
    import torch

    from flopkb.kernelpkg import load_op
    from flopkb.verify.machine import fingerprint

    if args.out is None and os.environ.get("OUT") and not args.smoke:
        # On the lent GPU machine, files under $OUT come back to the caller.
        args.out = Path(os.environ["OUT"]) / "scan_bwd.json"
    sizes = SMOKE[args.family] if args.smoke else FAMILIES[args.family]
    dims = comma_list(args.dims, int, sizes["dims"])
    dstates = comma_list(args.dstates, int, sizes["dstates"])
    mods = (load_op("selective_scan", "scan"), load_op("selective_scan", "backward"),
            load_op("selective_scan", "reference"), load_op("selective_scan", "cost"))
    args.fwd_variants = comma_list(args.fwd_variants, str, mods[0].FORWARD_VARIANTS)
    args.bwd_variants = comma_list(args.bwd_variants, str, mods[1].BACKWARD_VARIANTS)
    error = (unknown(args.fwd_variants, mods[0].FORWARD_VARIANTS, "forward variants")
             or unknown(args.bwd_variants, mods[1].BACKWARD_VARIANTS, "backward variants"))
    if error:
        print(error, file=sys.stderr)
        return 2
    ext, peer_note = load_mamba(args.mamba_ext, args.mamba_module)
    log(f"peer: {peer_note}")
    result: dict[str, Any] = {
        "machine": fingerprint(), **header(),
        "argv": argv if argv is not None else sys.argv[1:], "peer": peer_note,
        "rounds": args.rounds, "bound": BOUND, "family": args.family, "shapes": [],
    }
    torch.manual_seed(0)
    shapes = [(dim, dstate, steps, call) for dim in dims for dstate in dstates
              for steps in sizes["steps"] for call in args.calls.split(",")]
    for dim, dstate, steps, call in shapes:
        shape = {"B": sizes["batch"], "D": dim, "T": steps, "N": dstate,
                 "call": call, "layer": call == "layer", "dtype": "bfloat16"}
        log(f"B={shape['B']} D={dim} T={shape['T']} N={dstate} call={call}")
        result["shapes"].append(bench_shape(torch, mods, shape, args, ext, peer_note))
        for item, r in result["shapes"][-1]["ratios"].items():
            ratio = f"{r['ratio']:.3f}x" if r["ratio"] else "no peer"
            log(f"  {item}: best {r['best']} {r['best_ms']:.3f} ms, vs Mamba {ratio}")
        write(args.out, result)
        if not args.smoke:
            torch.cuda.empty_cache()
    write(args.out, result)
    return 0


def write(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        write_json(path, result)


if __name__ == "__main__":
    raise SystemExit(main())
