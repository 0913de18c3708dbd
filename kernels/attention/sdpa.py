"""Causal attention in the SSD layout, through `scaled_dot_product_attention` with a forced backend.

Inputs q, k, v are [B, T, H, D], the layout of the SSD kernels' x [B, T, H, P], so that experiments
comparing Mamba-2 with attention feed both the same tensors. SDPA wants [B, H, T, D]: a transposed
*view* is passed (no copy; the last dimension stays contiguous, all FlashAttention-2 needs), and
the output, which flash allocates in the query's memory order, is viewed back to [B, T, H, D].

The backend is forced with `torch.nn.attention.sdpa_kernel([backend])`: with a single backend
enabled SDPA either runs that backend or raises ("No available kernel"); it never falls back.
`backend="flash"` is FlashAttention-2 and needs CUDA tensors (PyTorch's CPU "flash" kernel is a
different implementation, so it is refused here); `backend="math"` is the explicit CPU-test path.
`attention_backend` reports which SDPA implementation actually ran (from the profiler's op names).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS: dict[str, SDPBackend] = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}

# aten op that each SDPA backend dispatches to; the most specific names come first.
_OP_TO_BACKEND = (
    ("_scaled_dot_product_flash_attention_for_cpu", "flash-cpu"),
    ("_scaled_dot_product_flash_attention", "flash"),
    ("_scaled_dot_product_efficient_attention", "efficient"),
    ("_scaled_dot_product_cudnn_attention", "cudnn"),
    ("_scaled_dot_product_attention_math", "math"),
)


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"expected backend in {list(BACKENDS)}, got {backend!r}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"expected {name} of shape [B, T, H, D], got {shape}")
    if not (q.shape == k.shape == v.shape):
        raise ValueError(
            f"expected q, k, v of one shape [B, T, H, D], got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    if not (q.dtype == k.dtype == v.dtype) or not (q.device == k.device == v.device):
        raise ValueError(
            f"expected q, k, v of one dtype on one device, got {q.dtype}/{k.dtype}/{v.dtype} on "
            f"{q.device}/{k.device}/{v.device}"
        )
    if backend == "flash":
        if not q.is_cuda:
            raise ValueError(
                f"expected CUDA tensors for backend 'flash' (FlashAttention-2), got {q.device}; "
                "use backend='math' on the CPU"
            )
        if q.dtype not in (torch.float16, torch.bfloat16):
            raise ValueError(f"expected fp16 or bf16 for backend 'flash', got {q.dtype}")


def causal_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, backend: str = "flash",
    scale: float | None = None,
) -> torch.Tensor:
    """o [B, T, H, D] = softmax(q k^T * scale + causal mask) v, per batch and head.

    q, k, v: [B, T, H, D], one dtype and device. `scale` defaults to 1 / sqrt(D). Raises
    ValueError on bad inputs and RuntimeError when the forced backend cannot run on them.
    """
    _check(q, k, v, backend)
    with sdpa_kernel([BACKENDS[backend]]):
        try:
            o = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                is_causal=True, scale=scale,
            )
        except RuntimeError as err:
            raise RuntimeError(
                f"SDPA backend {backend!r} cannot run on q {tuple(q.shape)} {q.dtype} "
                f"{q.device}: {err}"
            ) from err
    return o.transpose(1, 2)


def attention_backend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, backend: str = "flash"
) -> str:
    """Run `causal_attention` once under the profiler and return the backend that actually ran.

    Returns one of "flash", "flash-cpu", "efficient", "cudnn", "math" (read off the aten op that
    SDPA dispatched to). Raises RuntimeError when it is not the requested one, so a caller timing
    "flash" can never be timing something else.
    """
    import warnings

    from torch.profiler import ProfilerActivity, profile

    # torch 2.11's profiler warns that it "clears events at the end of each cycle": irrelevant
    # for one un-scheduled cycle, and an error under warnings-as-errors test runs
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            causal_attention(q, k, v, backend=backend)
    names = {event.name for event in prof.events()}
    ran = next(
        (label for op, label in _OP_TO_BACKEND if any(op in name for name in names)), None
    )
    if ran is None:
        raise RuntimeError(f"no SDPA backend op found among the profiled ops {sorted(names)}")
    if ran != backend:
        raise RuntimeError(f"requested SDPA backend {backend!r} but {ran!r} ran")
    return ran
