"""Input validation for the GEMM wrappers (failures: `ValueError("expected ..., got ...")`)."""

from __future__ import annotations

import torch


def check_operands(
    name: str, a: torch.Tensor, b: torch.Tensor, dtypes: tuple[torch.dtype, ...]
) -> tuple[int, int, int]:
    """Validate a [M, K] @ b [K, N] and return (M, N, K).

    Any strides are accepted (the kernels take strides), but both operands must be 2-D, non-empty,
    of one of `dtypes`, of the same dtype and on the same device.
    """
    for label, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            got = type(t).__name__
            raise ValueError(f"{name}: expected {label} to be a torch.Tensor, got {got}")
        if t.dim() != 2:
            raise ValueError(f"{name}: expected {label} to be 2-D, got shape {tuple(t.shape)}")
        if t.dtype not in dtypes:
            raise ValueError(f"{name}: expected {label}.dtype in {list(dtypes)}, got {t.dtype}")
        if t.numel() == 0:
            raise ValueError(f"{name}: expected a non-empty {label}, got shape {tuple(t.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"{name}: expected a and b of one dtype, got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"{name}: expected a and b on one device, got {a.device} and {b.device}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"{name}: expected a [M, K] and b [K, N] with matching K, got {tuple(a.shape)} "
            f"and {tuple(b.shape)}"
        )
    return a.shape[0], b.shape[1], a.shape[1]


def check_out(
    name: str, out: torch.Tensor | None, shape: tuple[int, int], dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    """Return `out` after checking it, or a fresh [M, N] tensor when it is None."""
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    if tuple(out.shape) != shape or out.dtype != dtype or out.device != device:
        raise ValueError(
            f"{name}: expected out of shape {shape}, dtype {dtype} on {device}, got "
            f"{tuple(out.shape)}, {out.dtype} on {out.device}"
        )
    return out
