"""The one tiled GEMM body that the bf16, INT8, emulated-INT8 and SIMT wrappers launch.

c [M, N] = a [M, K] @ b [K, N], any strides. Each program computes one BLOCK_M x BLOCK_N tile of c,
walking K in BLOCK_K steps. Programs are numbered in groups of GROUP_M tile-rows ("grouped
ordering", Triton tutorial 03) so that consecutive programs share A row-panels and B column-panels
while they are still in L2. The constexprs choose the arithmetic:

- ACC_DTYPE: tl.float32 (floating inputs) or tl.int32 (int8 inputs, native integer MMA);
- UPCAST_BF16: convert the loaded tiles to bf16 before the dot (the emulated INT8 path);
- INPUT_PRECISION: None (tensor cores: wgmma on Hopper) or "ieee" (fp32 inputs: Triton then has no
  MMA instruction to use and lowers the dot to FMA on the CUDA cores, the SIMT path);
- INTERPRETER_BF16_FIX: set only under TRITON_INTERPRET=1 with bf16 dot operands (see the loop).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def gemm_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr, ACC_DTYPE: tl.constexpr, UPCAST_BF16: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, INTERPRETER_BF16_FIX: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Rows/cols past the edge wrap onto valid ones, so the loads need no M/N mask (their results
    # land in rows/cols the masked store drops); int64 so huge operands cannot overflow offsets.
    rm = (offs_m % M).to(tl.int64)
    rn = (offs_n % N).to(tl.int64)
    p_a = a_ptr + rm[:, None] * stride_am + offs_k[None, :] * stride_ak
    p_b = b_ptr + offs_k[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            b_a = tl.load(p_a)
            b_b = tl.load(p_b)
        else:
            k_left = K - k * BLOCK_K
            b_a = tl.load(p_a, mask=offs_k[None, :] < k_left, other=0)
            b_b = tl.load(p_b, mask=offs_k[:, None] < k_left, other=0)
        if INTERPRETER_BF16_FIX:
            # Triton 3.9's CPU interpreter mishandles bf16 tiles in dot and int8 -> bf16 casts
            # (it reads raw bits); fp32 holds every bf16 and int8 value exactly, so an IEEE fp32
            # dot computes the same products and fp32 sums as the bf16 tensor-core dot.
            acc = tl.dot(b_a.to(tl.float32), b_b.to(tl.float32), acc, input_precision="ieee")
        else:
            if UPCAST_BF16:
                b_a = b_a.to(tl.bfloat16)
                b_b = b_b.to(tl.bfloat16)
            acc = tl.dot(b_a, b_b, acc, input_precision=INPUT_PRECISION, out_dtype=ACC_DTYPE)
        p_a += BLOCK_K * stride_ak
        p_b += BLOCK_K * stride_bk

    cm = offs_m.to(tl.int64)
    cn = offs_n.to(tl.int64)
    p_c = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    mask_c = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(p_c, acc.to(c_ptr.dtype.element_ty), mask=mask_c)


def even_k(args: dict) -> bool:
    """Heuristic: K is a multiple of BLOCK_K, so the K-edge masks can be compiled out."""
    return args["K"] % args["BLOCK_K"] == 0


def interpreted() -> bool:
    """True under TRITON_INTERPRET=1 (CPU tests): one small config, no autotuning."""
    import os

    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def interpreter_configs() -> list[triton.Config]:
    """16x16x16 tiles and GROUP_M=2: odd test sizes then cross every edge and every group."""
    return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2})]


def tile_configs(tiles: list[tuple[int, int, int, int, int]], pre_hook=None) -> list[triton.Config]:
    """Autotune configs from (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps) rows, GROUP_M 8."""
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8},
                          num_stages=s, num_warps=w, pre_hook=pre_hook)
            for m, n, k, s, w in tiles]


def tuned_gemm(tiles: list[tuple[int, int, int, int, int]]):
    """`gemm_kernel` autotuned over `tiles` (`tile_configs` rows; the one small
    `interpreter_configs` tile under TRITON_INTERPRET=1), EVEN_K read from the shapes."""
    configs = interpreter_configs() if interpreted() else tile_configs(tiles)
    return triton.autotune(configs=configs, key=["M", "N", "K"])(
        triton.heuristics({"EVEN_K": even_k})(gemm_kernel))


def launch(
    kernel, a, b, c, *, acc_dtype, upcast_bf16: bool = False, input_precision: str | None = None
) -> None:
    """Launch an autotuned `gemm_kernel` wrapper over a grid of output tiles."""
    M, K = a.shape
    N = b.shape[1]

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    bf16_dot = upcast_bf16 or a.dtype == torch.bfloat16
    kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        ACC_DTYPE=acc_dtype, UPCAST_BF16=upcast_bf16, INPUT_PRECISION=input_precision,
        INTERPRETER_BF16_FIX=bf16_dot and interpreted(),
    )
