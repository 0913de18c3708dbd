"""Triton bf16 GEMM: c [M, N] bf16 = a [M, K] bf16 @ b [K, N] bf16, fp32 accumulation.

On Hopper the dot lowers to wgmma (tensor cores). Three schedules of the same tiled product:

- "pointer": per-thread pointer loads staged through shared memory by a `num_stages`-deep
  cp.async pipeline (`_tiled.py`); works for any strides and sizes.
- "tma": operand tiles fetched by the TMA copy engine through tensor descriptors (`_tma.py`).
- "tma_persistent": TMA tiles, one program per SM looping over output tiles.

`schedule="auto"` takes DEFAULT_SCHEDULE when the operands meet TMA's alignment rules, else
"pointer". Config lists are small on purpose: 128x256x64 and 128x128x64 tiles with 8 warps (two
warpgroups) are the shapes that keep wgmma fed on an H100/H200 (Triton tutorials 03 and 09), plus
one 64x128 tile for skinny products; autotuning over more costs compile time in every
`flopkb verify` run for little gain.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from .._platform import hopper_paths, portable
from . import _tma
from ._checks import check_operands, check_out
from ._tiled import interpreted, launch, tile_configs, tuned_gemm

SCHEDULES = ("auto", "pointer", "tma", "tma_persistent")
# measured fastest on an H200 at 4096^3 and 8192^3 (bench/results/dense_h200.json)
DEFAULT_SCHEDULE = "tma_persistent"


# bf16 tiles for the pointer schedule; skinny products (the low-rank pair's x @ U with r = 256)
# have too few 128-wide tiles to fill 132 SMs, and 64-row tiles double the tile count
_kernel = tuned_gemm([(128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8),
                      (128, 128, 64, 4, 8), (64, 128, 64, 4, 4)])


def _tma_configs(persistent: bool) -> list[triton.Config]:
    hook = _tma.set_block_shapes
    if interpreted():
        # 32 columns so the persistent kernel's half-tile stores are 16 wide
        return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2},
                              pre_hook=hook)]
    shapes = [(128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (128, 128, 64, 4, 8)]
    if not persistent:
        shapes.append((64, 128, 64, 4, 4))
    return tile_configs(shapes, pre_hook=hook)


_tma_kernel = triton.autotune(configs=_tma_configs(False), key=["M", "N", "K"])(_tma.tma_kernel)
_tma_persistent_kernel = triton.autotune(configs=_tma_configs(True), key=["M", "N", "K"])(
    _tma.tma_persistent_kernel
)


@functools.lru_cache(maxsize=8)
def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        # interpreter: a few "SMs" so every program loops over several tiles
        return 3
    return torch.cuda.get_device_properties(device).multi_processor_count


def _launch_tma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, persistent: bool) -> None:
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    N = b.shape[1]
    # block shapes are placeholders: the autotune pre-hook sets them per config
    descs = [TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1]) for t in (a, b, c)]
    fix = interpreted()
    if persistent:
        sms = _num_sms(a.device)

        def grid(meta: dict) -> tuple[int]:
            tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
            return (min(sms, tiles),)

        _tma_persistent_kernel[grid](*descs, M, N, K, NUM_SMS=sms, INTERPRETER_BF16_FIX=fix)
    else:

        def grid(meta: dict) -> tuple[int]:
            return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

        _tma_kernel[grid](*descs, M, N, K, INTERPRETER_BF16_FIX=fix)


def _tma_available(device: torch.device) -> bool:
    """TMA needs a Hopper-or-newer GPU (or the CPU interpreter) and Triton's host descriptors;
    never under FLOPKB_PORTABLE=1 (the paths an Ampere or Ada part takes)."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: F401
    except ImportError:
        return False
    if device.type == "cuda":
        return hopper_paths(device)
    return interpreted() and not portable()


def matmul(
    a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None, schedule: str = "auto"
) -> torch.Tensor:
    """c [M, N] bf16 = a [M, K] bf16 @ b [K, N] bf16, accumulated in fp32.

    `out`, if given, must be a bf16 [M, N] tensor on a's device; it is written and returned.
    `schedule`: "auto" (TMA schedule DEFAULT_SCHEDULE when the strides allow it, else "pointer"),
    "pointer", "tma" or "tma_persistent" (these two raise ValueError when TMA cannot be used).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"matmul: expected schedule in {list(SCHEDULES)}, got {schedule!r}")
    M, N, _ = check_operands("matmul", a, b, (torch.bfloat16,))
    c = check_out("matmul", out, (M, N), torch.bfloat16, a.device)
    tma_ok = _tma_available(a.device) and _tma.eligible(a, b, c)
    if schedule == "auto":
        schedule = DEFAULT_SCHEDULE if tma_ok else "pointer"
    if schedule == "pointer":
        launch(_kernel, a, b, c, acc_dtype=tl.float32)
    elif not tma_ok:
        raise ValueError(
            f"matmul: expected a Hopper GPU (or the interpreter), unit last strides and "
            f"16-byte-aligned rows for schedule {schedule!r}, got {a.device}, strides "
            f"{a.stride()}, {b.stride()}, {c.stride()}"
        )
    else:
        _launch_tma(a, b, c, persistent=schedule == "tma_persistent")
    return c
