"""axpby: out = a * x + b * y, elementwise: the memory-bound yardstick of claim A6.

Three bytes streams (x, y in; out out) and 3 FLOPs per element: at ~0.25-1 FLOP/byte it sits far
left of the ridge point, so its time is bytes / bandwidth and its efficiency is achieved GB/s
over the measured copy bandwidth. Each program handles BLOCK contiguous elements: with BLOCK=4096
and 8 warps every thread issues four 16-byte loads per input (fp32), enough in flight to cover
HBM latency on an H200. Arithmetic in fp32, stored in x's dtype.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 4096
NUM_WARPS = 8
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _axpby_kernel(x_ptr, y_ptr, out_ptr, a, b, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    b_x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    b_y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a * b_x + b * b_y).to(out_ptr.dtype.element_ty), mask=mask)


def axpby(
    x: torch.Tensor, y: torch.Tensor, a: float, b: float, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """out = a * x + b * y; x, y contiguous, one shape, one float dtype, one device."""
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, torch.Tensor) or t.dtype not in DTYPES:
            got = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(
                f"axpby: expected {name} a tensor of dtype in {list(DTYPES)}, got {got}"
            )
        if not t.is_contiguous():
            raise ValueError(f"axpby: expected a contiguous {name}, got strides {t.stride()}")
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(
            f"axpby: expected x and y of one shape, dtype and device, got {tuple(x.shape)} "
            f"{x.dtype} {x.device} and {tuple(y.shape)} {y.dtype} {y.device}"
        )
    if out is None:
        out = torch.empty_like(x)
    elif out.shape != x.shape or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError(
            f"axpby: expected a contiguous out like x {tuple(x.shape)} {x.dtype}, got "
            f"{tuple(out.shape)} {out.dtype}"
        )
    n = x.numel()
    if n:
        _axpby_kernel[(triton.cdiv(n, BLOCK),)](
            x, y, out, float(a), float(b), n, BLOCK=BLOCK, num_warps=NUM_WARPS
        )
    return out
