"""Hopper-style bf16 GEMM schedules: tiles moved by the TMA copy engine (tensor descriptors).

c [M, N] bf16 = a [M, K] bf16 @ b [K, N] bf16, fp32 accumulation, both as in `_tiled.py` but the
operand tiles are fetched with `desc.load` (cp.async.bulk.tensor on sm_90, done on an mbarrier)
instead of per-thread pointer loads, which frees the registers and issue slots that address
arithmetic and cp.async take. The descriptors zero-fill out-of-bounds reads and clip stores, so no
masks are needed; they do need 16-byte-aligned row strides (K and N multiples of 8 for bf16) and
unit stride in the last dimension, which `eligible` checks.

- `tma_kernel`: one program per output tile, grouped ordering (as the pointer kernel).
- `tma_persistent_kernel`: one program per SM looping over tiles (`tl.range(..., flatten=True)`
  lets the software pipeline run the next tile's loads under the current tile's epilogue), and
  the epilogue stored as two half tiles to leave shared memory for the pipeline (Triton
  tutorial 09's schedule).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _dot(b_a, b_b, acc, INTERPRETER_BF16_FIX: tl.constexpr):
    if INTERPRETER_BF16_FIX:
        # see _tiled.py: the CPU interpreter mishandles bf16 dots; fp32 holds bf16 exactly
        return tl.dot(b_a.to(tl.float32), b_b.to(tl.float32), acc, input_precision="ieee")
    else:
        return tl.dot(b_a, b_b, acc)


@triton.jit
def tma_kernel(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    INTERPRETER_BF16_FIX: tl.constexpr,
):
    pid_m, pid_n = _tile_coords(
        tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M
    )
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        b_a = a_desc.load([off_m, k * BLOCK_K])
        b_b = b_desc.load([k * BLOCK_K, off_n])
        acc = _dot(b_a, b_b, acc, INTERPRETER_BF16_FIX)
    c_desc.store([off_m, off_n], acc.to(tl.bfloat16))


@triton.jit
def tma_persistent_kernel(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr, INTERPRETER_BF16_FIX: tl.constexpr,
):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    # the flattened loop may run the epilogue one iteration late: track its tile separately
    tile_id_c = start_pid - NUM_SMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            b_a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b_b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = _dot(b_a, b_b, acc, INTERPRETER_BF16_FIX)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        c0, c1 = tl.split(halves)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], c0.to(tl.bfloat16))
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], c1.to(tl.bfloat16))


def eligible(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> bool:
    """TMA needs unit last strides, 16-byte-aligned row strides and base addresses."""
    for t in (a, b, c):
        if t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16:
            return False
    return True


def set_block_shapes(nargs: dict) -> None:
    """Autotune pre-hook: the descriptors' box shapes follow the config being tried."""
    nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]
    nargs["b_desc"].block_shape = [nargs["BLOCK_K"], nargs["BLOCK_N"]]
    c_cols = nargs["BLOCK_N"] // 2 if "NUM_SMS" in nargs else nargs["BLOCK_N"]
    nargs["c_desc"].block_shape = [nargs["BLOCK_M"], c_cols]
