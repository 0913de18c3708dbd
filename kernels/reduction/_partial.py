"""The per-block partial sum both reductions share: they differ only in how partials combine."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def block_sum(x_ptr, n, BLOCK: tl.constexpr):
    """fp32 sum of x[pid * BLOCK : (pid + 1) * BLOCK] (masked at the end), a fixed tree in-block."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    b_x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    return tl.sum(b_x, axis=0)
