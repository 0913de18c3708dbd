"""FP32 non-matmul throughput: a long dependent chain of CUDA-core arithmetic per element.

Claim served: FlashAttention-2's "each non-matmul FLOP is 16x more expensive than a matmul FLOP"
(bf16 tensor-core FLOP/s over FP32 non-matmul FLOP/s). Each element is loaded once, run through
`iters` steps, stored once: 2 * iters (fma) or 4 * iters (exp) FLOPs per 8 bytes, far right of
the FP32 ridge point, so the time is set by the SIMT (and, for exp, the special-function) units.

- `mode="fma"`: y = y * a + b per step, one fused multiply-add (2 FLOPs): the datasheet's FP32
  rate is this instruction's peak;
- `mode="exp"`: y = exp2(y * s) * a + b per step (a multiply, an exp2, an fma: counted 4 FLOPs,
  the exp2 as one), the softmax's kind of work.

Constants are runtime arguments (the compiler cannot fold the chain). With the defaults
a = 0.999, b = -0.001, s = -1 both stay finite: the fma chain decays by a^iters towards
b / (1 - a) = -1 (after 256 steps 77% of each input is still there, so outputs differ per
element), the exp chain contracts to a fixed point near 0.64. BLOCK = 1024
elements per program over 4 warps: 8 independent chains per thread hide the FMA latency.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024
NUM_WARPS = 4
MODES = ("fma", "exp")


@triton.jit
def _chain_kernel(x_ptr, out_ptr, a, b, s, n, ITERS: tl.constexpr, EXP: tl.constexpr,
                  BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # the mode is a compile-time branch outside the loop: each variant's loop body is only its chain
    if EXP:
        for _ in range(ITERS):
            y = tl.math.exp2(y * s) * a + b
    else:
        for _ in range(ITERS):
            y = y * a + b
    tl.store(out_ptr + offs, y, mask=mask)


def fp32_chain(x: torch.Tensor, iters: int, mode: str = "fma", *, a: float = 0.999,
               b: float = -0.001, s: float = -1.0) -> torch.Tensor:
    """`iters` chained steps of `mode` on every element of contiguous fp32 `x`; fp32 out."""
    if mode not in MODES:
        raise ValueError(f"fp32_chain: expected mode in {list(MODES)}, got {mode!r}")
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or not x.is_contiguous():
        raise ValueError("fp32_chain: expected a contiguous float32 tensor")
    if not 1 <= int(iters) <= 4096:
        raise ValueError(f"fp32_chain: expected 1 <= iters <= 4096, got {iters}")
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        _chain_kernel[(triton.cdiv(n, BLOCK),)](x, out, float(a), float(b), float(s), n,
                                                ITERS=int(iters), EXP=mode == "exp",
                                                BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out

