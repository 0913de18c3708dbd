"""Every serving layer implementation at the four serving claims' shapes, beside each other.

    python bench/serving_layers.py --out bench/results/serving_layers_h200.json [--rounds 3]
        [--claims serving-kimi-decode,...]
    python bench/serving_layers.py --smoke --out /tmp/smoke.json   (CPU, tiny sizes: checks only)

For each serving declaration (experiments/serving-*.yaml), each side's architecture, each phase
the claim reads and each layer type: every implementation the side declares
(kernels/layers/impls.py) is checked against the layer's float32 reference at a small shape and
timed at the claim's shape by the same code `flopkb verify --gpu --suite models` runs
(`flopkb.verify.experiments.serving.run.time_layer`: CUDA-graph replay, decode capture
required), in ROUNDS interleaved rounds (every layer and implementation once per round, rounds
one after the other); medians over rounds. Floors from flopkb/architecture/layer_floor.py at the
cuBLAS and copy ceilings measured at the start. Prints the table last, writes JSON after every
round.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path
from typing import Any

if "--smoke" in sys.argv:  # the interpreter must be chosen before triton is first imported
    os.environ.setdefault("TRITON_INTERPRET", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import comma_list, header, measure_ceilings, parser, write_json

CLAIMS = ("serving-samba-prompt", "serving-samba-generation", "serving-nemotron-h",
          "serving-kimi-decode")


def plan(kb: Any, claim: str) -> list[dict[str, Any]]:
    """The layers the claim times: (side, arch, phase, batch, tokens, kinds, declared)."""
    from flopkb.architecture.serving import layer_counts
    from flopkb.evidence import catalogue, hooks
    from flopkb.paths import bundled_root
    from flopkb.verify.experiments.serving import batches, setup

    info = catalogue.for_kb(bundled_root()).get(claim)
    s = setup(dict(hooks.experiment_module(info, bundled_root()).DEFAULTS))
    per = batches(s, kb)
    sides = {sd.name: sd.impls for sd in info.sides}
    out = []
    for side, key in (("model", "model"), ("baseline", "baseline_architecture")):
        arch = kb.architectures[s[key]]
        kinds = list(layer_counts(arch))
        if s["phase"] in ("prefill", "end_to_end"):
            out.append({"side": side, "arch": arch, "phase": "prefill", "batch": s["batch"],
                        "tokens": s["prompt_length"], "kinds": kinds, "declared": sides[side]})
        if s["phase"] != "prefill":
            for b in sorted({p[side] for p in per.values()}):
                out.append({"side": side, "arch": arch, "phase": "decode", "batch": b,
                            "tokens": s["decode_context"], "kinds": kinds,
                            "declared": sides[side]})
    return out


def _smoke_arch(arch: Any) -> Any:
    from flopkb.model.architecture import SourcedSize

    sizes = dict(d_model=24, attention_heads=4, kv_heads=2, head_dim=8, sliding_window=8,
                 mlp_size=20, ssm_state_size=5, ssm_dt_rank=3, ssm_heads=4, ssm_head_dim=8,
                 ssm_groups=2, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                 v_head_dim=8, experts=7, experts_per_token=2, expert_mlp_size=8,
                 linear_heads=2, linear_head_dim=8)
    present = {k: SourcedSize(value=v) for k, v in sizes.items()
               if getattr(arch.config, k, None) is not None}
    return arch.model_copy(update={"config": arch.config.model_copy(update=present)})


def main() -> int:
    ap = parser(__doc__, out=Path("bench/results/serving_layers.json"), rounds=3, smoke=True)
    ap.add_argument("--claims", default=",".join(CLAIMS),
                    help="serving declarations, comma-separated")
    args = ap.parse_args()
    from types import SimpleNamespace

    import torch

    from flopkb.kb import load_kb
    from flopkb.kernelpkg import load_op
    from flopkb.paths import bundled_root
    from flopkb.verify.context import Ceilings, Context
    from flopkb.verify.experiments.serving.run import time_layer
    from flopkb.verify.machine import fingerprint

    claims = comma_list(args.claims)
    bad = [c for c in claims if c not in CLAIMS]
    if bad:
        ap.error(f"unknown claims {bad}; expected among {', '.join(CLAIMS)}")
    kb, _ = load_kb(bundled_root())
    if args.smoke:
        # checks only: every implementation runs once, nothing is timed or recorded as a time
        load_op("layers", "_build").BACKEND = {"flash": "math", "masked": "math", "math": "math"}
        ceil: dict[str, Any] = {"origin": "none: --smoke times nothing"}
        ctx = Context(gpu=False, kb=kb)

        def run_once(label: str, fn: Any, arg_sets: Any, **_: Any) -> Any:
            fn(*arg_sets[0])
            return SimpleNamespace(median_ms=1.0, p10_ms=1.0, p90_ms=1.0)  # never stored

        ctx.time = run_once  # type: ignore[method-assign]
    else:
        ceil = measure_ceilings()
        ctx = Context(gpu=True, kb=kb, ceilings=Ceilings(ceil["bf16_matmul_tflops"],
                                                         ceil["copy_gbps"], "bench"))
    jobs = [(claim, job) for claim in claims for job in plan(kb, claim)]
    if args.smoke:
        for _, job in jobs:
            job["arch"], job["tokens"] = _smoke_arch(job["arch"]), min(job["tokens"], 19)
            job["batch"] = min(job["batch"], 2)
    samples: dict[tuple, list[float]] = {}
    rows: dict[tuple, dict[str, Any]] = {}
    result: dict[str, Any] = header(machine=None if args.smoke else fingerprint(),
                                    ceilings=ceil, rounds=args.rounds, smoke=args.smoke)
    for r in range(args.rounds):
        for claim, job in jobs:
            for kind in job["kinds"]:
                ctx.begin(3600)
                key = (claim, job["side"], job["phase"], job["batch"], kind)
                try:
                    lt = time_layer(ctx, job["arch"], kind, job["phase"], job["batch"],
                                    job["tokens"], tuple(job["declared"]))
                except Exception as exc:  # a peer absent for every implementation, OOM
                    rows[key] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
                    continue
                for name, iv in lt.impls.items():
                    samples.setdefault((*key, name), []).append(
                        float("nan") if args.smoke else iv.value * 1e3)
                rows[key] = {"floor_ms": lt.floor_s * 1e3 if lt.floor_s else None,
                             "skipped": lt.skipped, "refused": lt.refused, "work": lt.work}
                torch.cuda.empty_cache() if torch.cuda.is_available() else None
        table = []
        for (claim, side, phase, batch, kind), row in rows.items():
            mine = {k[-1]: v for k, v in samples.items()
                    if k[:-1] == (claim, side, phase, batch, kind)}
            table.append({"claim": claim, "side": side, "phase": phase, "batch": batch,
                          "layer_type": kind, "checked": sorted(mine),
                          "ms": None if args.smoke else {n: statistics.median(v)
                                                          for n, v in mine.items()},
                          "samples": None if args.smoke else mine, **row})
        result["layers"] = table
        result["rounds_done"] = r + 1
        write_json(args.out, result)
    print(f"{'claim':26} {'side':8} {'phase':7} {'B':>3} {'layer':18} {'impl':9} "
          f"{'ms':>9} {'floor':>9} {'frac':>5}")
    for row in result.get("layers", []):
        if "error" in row:
            print(f"{row['claim']:26} {row['side']:8} {row['phase']:7} {row['batch']:>3} "
                  f"{row['layer_type']:18} error: {row['error'][:60]}")
            continue
        floor = row["floor_ms"]
        timed = row["ms"] or {}
        for name in sorted(row["checked"], key=lambda n: timed.get(n, 0.0)):
            ms = timed.get(name)
            shown = f"{ms:9.4f}" if ms is not None else "  checked"
            frac = f"{floor / ms:5.2f}" if floor and ms else "  -  "
            floor_shown = f"{floor:9.4f}" if floor else "        -"
            print(f"{row['claim']:26} {row['side']:8} {row['phase']:7} {row['batch']:>3} "
                  f"{row['layer_type']:18} {name:9} {shown} {floor_shown} {frac}")
        for name, why in {**row["skipped"], **row["refused"]}.items():
            print(f"{'':26} {'':8} {'':7} {'':>3} {'':18} {name:9} {why[:60]}")
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
