"""Inputs and error measure shared by the SSD kernel tests (scalar and per-channel decay)."""

from __future__ import annotations

import torch

BOUND = {torch.float32: 1e-5, torch.bfloat16: 3e-2}
# Odd sizes: T not a multiple of any chunk, odd head dim P and state N, 2 groups over 4 heads.
SHAPE = {"batch": 2, "steps": 45, "heads": 4, "headdim": 5, "groups": 2, "dstate": 7}


def ssd_inputs(device, batch, steps, heads, headdim, groups, dstate, dtype=torch.float32):
    x = torch.randn(batch, steps, heads, headdim, device=device).to(dtype)
    dt = torch.rand(batch, steps, heads, device=device) * 0.5 + 0.05
    A = -(torch.rand(heads, device=device) * 2 + 0.2)
    Bm = torch.randn(batch, steps, groups, dstate, device=device).to(dtype)
    Cm = torch.randn(batch, steps, groups, dstate, device=device).to(dtype)
    return x, dt, A, Bm, Cm


def rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    assert not torch.isnan(out).any(), "kernel left unwritten (NaN) elements"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()
