"""Where a serving layer's time goes: its GPU kernels, each with its share, under torch.profiler.

    python bench/serving_layer_profile.py --out PATH [--claims serving-samba-prompt]
        [--kinds mamba1] [--impls bundled,mamba_cuda] [--calls 3]

For each serving declaration's layers (the same plan as bench/serving_layers.py: the claim's
sides, phases, batches and shapes) of the chosen layer types, each chosen implementation is
built by the code `flopkb verify --gpu --suite models` runs (kernels/layers), run once to warm up
(compiles, autotuning), then CALLS times under torch.profiler. The figures are the profiler's
device times per kernel name, summed over the calls and divided by CALLS; their sum is the
layer's device time without launch gaps. What the verdict reads is the graph-replayed time in the
serving evidence; this tool says which stage of a layer is far from its floor. Prints the table
last and writes JSON (machine fingerprint, every kernel) to --out.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import comma_list, header, parser, write_json
from bench.serving_layers import CLAIMS, plan

# kernels below this share of a layer's device time are summed into one "other" row
OTHER_SHARE = 0.01


def kernel_times(fn: Any, args: tuple, calls: int) -> dict[str, float]:
    """Device milliseconds per kernel name per call of fn(*args), from torch.profiler."""
    from flopkb.verify.timing import kernel_timeline

    return {name: ms / calls for name, ms in kernel_timeline(fn, args, calls).items()}


def main() -> int:
    ap = parser(__doc__, out=Path("bench/results/serving_layer_profile.json"), rounds=None)
    ap.add_argument("--claims", default="serving-samba-prompt")
    ap.add_argument("--kinds", default="mamba1", help="layer types, comma-separated")
    ap.add_argument("--impls", default="", help="implementations (default: every declared one)")
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    import torch

    from flopkb.kb import load_kb
    from flopkb.paths import bundled_root
    from flopkb.verify.context import Context
    from flopkb.verify.machine import fingerprint

    claims, kinds, impls = comma_list(args.claims), comma_list(args.kinds), comma_list(args.impls)
    bad = [c for c in claims if c not in CLAIMS]
    if bad:
        ap.error(f"unknown claims {bad}; expected among {', '.join(CLAIMS)}")
    kb, _ = load_kb(bundled_root())
    ctx = Context(gpu=True, kb=kb)
    table = ctx.load("layers", "impls")
    result: dict[str, Any] = header(machine=fingerprint(), calls=args.calls, layers=[])
    for claim in claims:
        for job in plan(kb, claim):
            build_layer = ctx.load("layers", job["phase"])
            build_layer = (build_layer.decode_layer if job["phase"] == "decode"
                           else build_layer.prefill_layer)
            for kind in (k for k in job["kinds"] if str(getattr(k, "value", k)) in kinds):
                names = table.for_layer(job["phase"], str(getattr(kind, "value", kind)),
                                        tuple(job["declared"]))
                for name in (n for n in names if not impls or n in impls):
                    row = {"claim": claim, "side": job["side"], "phase": job["phase"],
                           "batch": job["batch"], "tokens": job["tokens"],
                           "layer_type": str(getattr(kind, "value", kind)), "impl": name}
                    try:
                        with torch.no_grad():
                            fn, fargs = build_layer(ctx, job["arch"], kind, job["batch"],
                                                    job["tokens"], impl=name)
                            row["kernels_ms"] = kernel_times(fn, fargs, args.calls)
                        del fn, fargs
                    except Exception as exc:  # a peer absent, out of memory
                        row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    torch.cuda.empty_cache()
                    result["layers"].append(row)
                    write_json(args.out, result)
    for row in result["layers"]:
        where = (f"{row['claim']} {row['side']} {row['phase']} B={row['batch']} "
                 f"L={row['tokens']} {row['layer_type']} [{row['impl']}]")
        if "error" in row:
            print(f"{where}: {row['error']}")
            continue
        total = sum(row["kernels_ms"].values())
        print(f"{where}: {total:.3f} ms of device time per call")
        other = 0.0
        for name, ms in sorted(row["kernels_ms"].items(), key=lambda kv: -kv[1]):
            if ms < OTHER_SHARE * total:
                other += ms
                continue
            print(f"  {ms:9.3f} ms {ms / total:6.1%}  {name[:100]}")
        if other:
            print(f"  {other:9.3f} ms {other / total:6.1%}  (other kernels)")
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
