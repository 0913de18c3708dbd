"""The reductions as a side of an experiment: inputs, the correctness check against the float64
sum with its error bound, CUB's determinism levels as the peer (built for the GPU at hand), the
scatter-add inputs, and the bitwise comparisons the determinism claims read.

`ctx` is the experiment's Context (flopkb.verify.context). Loaded by path like the kernels
(`ctx.load("reduction", "bench")`), so it is hashed with them.
"""

from __future__ import annotations

from typing import Any

import torch

from flopkb.verify.errors import ExperimentError, PeerUnavailable

from . import cost, cub, reference

# CCCL's levels, in the order the claims name them.
LEVELS = ("not_guaranteed", "run_to_run", "gpu_to_gpu")
# CUB's tile (256 threads x 16 items): the block size the error bound of its sums is read with.
CUB_TILE = 4096


def inputs(ctx: Any, n: int, seed: int = 0) -> torch.Tensor:
    """x [n] fp32, normal values of mixed sign: the order of fp32 adds then changes the sum."""
    g = torch.Generator(device=ctx.device).manual_seed(ctx.seed(seed))
    return torch.randn(n, generator=g, device=ctx.device)


def check_sum(ctx: Any, label: str, out: Any, x: Any, block: int) -> None:
    """|out - float64 sum| within `reference.sum_error_bound` for `block`-element blocks; the
    check is recorded, and a sum outside the bound ends the experiment."""
    want = float(reference.sum_reference(x).item())
    bound = reference.sum_error_bound(x, block)
    err = abs(float(out.item()) - want)
    ok = err <= bound
    ctx.checks.append({"kernel": label, "shape": [x.numel()], "dtype": "float32", "error": err,
                       "tolerance": bound, "ok": ok})
    if not ok:
        raise ExperimentError(f"{label}: |sum - exact| = {err:.3g} above the bound {bound:.3g}")


def cub_levels(ctx: Any, side: str = "reduction") -> Any:
    """CUB's DeviceReduce::Sum at the three levels, built for this GPU (cub.py).

    Raises PeerUnavailable with one line (no GPU, no nvcc, no CCCL >= 3.1 headers, a failed
    build); records exactly what ran for the evidence."""
    if ctx.device.type != "cuda":
        raise PeerUnavailable("CUB's determinism levels run on a CUDA GPU only")
    try:
        lib = cub.load(ctx.device)
    except cub.CubUnavailable as exc:
        raise PeerUnavailable(f"cub: {exc}") from exc
    ctx.describe_impl(side, lib.description)
    return lib


def distinct(outputs: list[Any]) -> int:
    """How many bitwise-different results (tensors of one shape and fp32 dtype) are in `outputs`."""
    rows = torch.stack([o.reshape(-1) for o in outputs]).view(torch.int32)
    return int(torch.unique(rows, dim=0).shape[0])


def bits_hex(out: Any) -> str:
    """The fp32 bit pattern of a 0-dim result, e.g. '0xc4b6c376' (stored in sweep rows)."""
    return f"0x{int(out.reshape(1).view(torch.int32).item()) & 0xFFFFFFFF:08x}"


def check_cub_plan(ctx: Any, capability: tuple[int, int] = (9, 0)) -> None:
    """CPU plan mode: the nvcc command CUB's levels would be built with (headers first), or the
    one line saying why they cannot be built here. A missing peer is not a failed check; a
    command that would not put the CCCL headers first is."""
    try:
        nvcc, include = cub.find_nvcc(), cub.find_cccl_include()
        cub.header_version(include)
    except cub.CubUnavailable as exc:
        ctx.checks.append({"kernel": "reduction.cub (build plan)", "ok": True,
                           "available": False, "reason": str(exc)})
        return
    out = cub.cache_dir() / "<key>" / "libflopkb_cub_levels.so"
    command = cub.build_command(nvcc, include, capability, out)
    ok = command[6:8] == ["-I", str(include)] and command[-1] == str(cub.SOURCE)
    ctx.checks.append({"kernel": "reduction.cub (build plan)", "ok": ok, "available": True,
                       "command": " ".join(command)})
    if not ok:
        raise ExperimentError(f"the CUB build command does not put {include} first: {command}")


def scatter_inputs(ctx: Any, n: int, bins: int, seed: int = 0) -> tuple[Any, Any]:
    """src [n] fp32 normal, index [n] int64 uniform in [0, bins): n / bins collisions per bin."""
    g = torch.Generator(device=ctx.device).manual_seed(seed)
    src = torch.randn(n, generator=g, device=ctx.device)
    index = torch.randint(0, bins, (n,), generator=g, device=ctx.device)
    return src, index


def scatter_sets(ctx: Any, n: int, bins: int) -> list[tuple[Any, Any]]:
    """Scatter inputs rotated until one set no longer fits in L2 between its uses."""
    return [scatter_inputs(ctx, n, bins, seed)
            for seed in range(ctx.rotations(cost.scatter_bytes(n, bins)))]
