"""Argument checks shared by every SSD schedule, so scan, chunked and quadratic accept the same
inputs and layouts."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._ssm_common import FLOAT_DTYPES, check_device, check_tensor


@dataclass(frozen=True)
class SSDShape:
    batch: int
    steps: int
    heads: int
    headdim: int
    groups: int
    dstate: int
    device: torch.device


CHUNK_SIZES = (16, 32, 64, 128, 256)


def check_chunk_size(chunk_size: int) -> None:
    """Chunked schedules take power-of-two chunks from 16 (the MMA minimum) to 256."""
    if chunk_size not in CHUNK_SIZES:
        sizes = ", ".join(map(str, CHUNK_SIZES))
        raise ValueError(f"expected chunk_size in {sizes}, got {chunk_size}")


def check_ssd_args(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor | None,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None,
    out: torch.Tensor | None,
    *,
    log_decay: torch.Tensor | None = None,
    chunk_size: int | None = None,
) -> SSDShape:
    """x [B, T, H, P]; dt [B, T, H]; A [H] fp32 (None for per-channel decay, which passes
    log_decay [B, T, H, N] instead); Bm, Cm [B, T, G, N] with G dividing H; Dskip [H] fp32;
    out [B, T, H, P] in x's dtype; chunk_size (chunked schedules) a power of two in 16..256."""
    if chunk_size is not None:
        check_chunk_size(chunk_size)
    device = check_device(check_tensor("x", x, (None, None, None, None), FLOAT_DTYPES))
    batch, steps, heads, headdim = x.shape
    check_tensor("dt", dt, (batch, steps, heads), FLOAT_DTYPES, device)
    if A is not None:
        check_tensor("A", A, (heads,), (torch.float32,), device)
    check_tensor("Bm", Bm, (batch, steps, None, None), FLOAT_DTYPES, device)
    groups, dstate = Bm.shape[2], Bm.shape[3]
    if groups == 0 or heads % groups:
        raise ValueError(f"expected a group count dividing H={heads}, got G={groups}")
    check_tensor("Cm", Cm, (batch, steps, groups, dstate), (Bm.dtype,), device)
    if Dskip is not None:
        check_tensor("Dskip", Dskip, (heads,), (torch.float32,), device)
    if out is not None:
        check_tensor("out", out, (batch, steps, heads, headdim), (x.dtype,), device)
    if log_decay is not None:
        check_tensor("log_decay", log_decay, (batch, steps, heads, dstate), FLOAT_DTYPES, device)
    return SSDShape(batch, steps, heads, headdim, groups, dstate, device)
