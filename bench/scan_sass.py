"""Static instruction counts of the selective-scan kernels as compiled for a GPU, on a CPU.

    python bench/scan_sass.py [--arch 90] [--out bench/results/scan_sass_sm90.json]

Triton compiles for a named target without a GPU (its bundled ptxas and cuobjdump do the rest),
with the specialisation its JIT would apply at the benchmark shapes (integer arguments equal to 1
become constants, integers and pointers divisible by 16 are marked so). Per kernel configuration
this counts SASS instructions of the whole kernel (the time loop dominates): MUFU.EX2 (special-
function unit), FFMA/FMUL/FADD, SHFL, BAR (barriers, each layout conversion through shared memory
has some), LDG/STG, and reads the registers per thread and spills. It explains where time can go;
it measures nothing (the timings come from bench/kernels_*.py on the GPU).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import header, parser, write_json

OPS = ("MUFU.EX2", "MUFU.LG2", "FFMA", "FMUL", "FADD", "SHFL", "BAR", "STS", "LDS", "LDG", "STG",
       "REDG", "ATOMG")
# Benchmark shape of issues 9 and 10 (B=8, T=4096, D=2048) and the default blocks.
SHAPES = ((2048, 16, 64), (2048, 64, 16))
T = 4096


def compile_counts(kern, args: dict[str, Any], consts: dict[str, Any], num_warps: int,
                   arch: int) -> dict[str, Any]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(kern.arg_names):
        if name in consts:
            sig[name], constexprs[name] = "constexpr", consts[name]
            continue
        value = args[name]
        if isinstance(value, str):
            sig[name], attrs[(i,)] = value, [["tt.divisibility", 16]]
        elif value == 1:
            sig[name], constexprs[name] = "constexpr", 1
        else:
            sig[name] = "i32"
            if value % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    compiled = triton.compile(ASTSource(fn=kern, signature=sig, constexprs=constexprs, attrs=attrs),
                              target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})
    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        usage = subprocess.run([str(tools / "cuobjdump"), "-res-usage", str(cubin)],
                               capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([str(tools / "cuobjdump"), "-sass", str(cubin)],
                              capture_output=True, text=True, check=True).stdout
    return {
        "registers": int(re.search(r"REG:(\d+)", usage).group(1)),
        "spill_bytes": int(re.search(r"LOCAL:(\d+)", usage).group(1)),
        "shared_bytes": compiled.metadata.shared,
        "counts": {op: len(re.findall(r"\b" + re.escape(op) + r"\b", sass)) for op in OPS},
    }


def configurations(scan, bwd) -> list[tuple[str, Any, dict, dict, int]]:
    rows = []
    for dim, n, bd in SHAPES:
        fwd_args = {k: "*bf16" for k in ("u_ptr", "delta_ptr", "B_ptr", "C_ptr", "y_ptr")}
        fwd_args |= {k: "*fp32" for k in ("A_ptr", "D_ptr", "bias_ptr", "ckpt_ptr")}
        fwd_args |= {"DIM": dim, "T": T, "N": n, "NCK": T // 64 - 1, "s_ub": dim * T, "s_ud": T,
                     "s_ut": 1, "s_bb": n * T, "s_bn": 1, "s_bt": n}
        for layer in (False, True):
            for tile, ckpt in ((False, 0), (True, 0), (True, 64)):
                consts = {"HAS_D": True, "HAS_BIAS": layer, "SOFTPLUS": layer, "BLOCK_D": bd,
                          "BLOCK_N": n, "UNROLL": 4, "SP_TILE": tile, "CKPT": ckpt}
                name = f"fwd N={n} softplus+bias={layer} sp_tile={tile} ckpt={ckpt}"
                rows.append((name, scan._ss_fwd_kernel, fwd_args, consts, 4))
        bwd_args = {k: "*bf16" for k in ("u_ptr", "delta_ptr", "B_ptr", "C_ptr", "dy_ptr",
                                         "du_ptr", "ddelta_ptr")}
        bwd_args |= {k: "*fp32" for k in ("A_ptr", "D_ptr", "bias_ptr", "ckpt_ptr", "scratch_ptr",
                                          "dA_ptr", "dB_ptr", "dC_ptr", "dD_ptr", "dbias_ptr")}
        bwd_args |= {"DIM": dim, "T": T, "N": n, "NCK": T // 64 - 1}
        for variant, cfg in bwd.BACKWARD_VARIANTS.items():
            if "ckpt_every" in cfg:
                continue
            block = max(1, int(bd * cfg.get("block_d_scale", 1.0)))
            consts = {"HAS_D": True, "HAS_BIAS": True, "SOFTPLUS": True, "BLOCK_D": block,
                      "BLOCK_N": n, "CHUNK": 64, "ATOMIC_BC": cfg.get("atomic_bc", False)}
            rows.append((f"bwd N={n} softplus+bias=True {variant}", bwd._ss_bwd_kernel, bwd_args,
                         consts, cfg.get("num_warps", 4)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 80, 89, 90")
    args = ap.parse_args(argv)
    import triton

    from flopkb.kernelpkg import load_op

    scan, bwd = load_op("selective_scan", "scan"), load_op("selective_scan", "backward")
    result: dict[str, Any] = {
        **header(), "arch": f"sm_{args.arch}",
        "triton": triton.__version__, "shape": {"D": [s[0] for s in SHAPES], "T": T},
        "kernels": {},
    }
    for name, kern, kargs, consts, warps in configurations(scan, bwd):
        entry = compile_counts(kern, kargs, consts, warps, args.arch)
        entry |= {"constexprs": consts, "num_warps": warps}
        result["kernels"][name] = entry
        counts = " ".join(f"{k}={v}" for k, v in entry["counts"].items() if v)
        print(f"{name:55s} regs {entry['registers']:3d} spill {entry['spill_bytes']} {counts}",
              flush=True)
    if args.out is not None:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
