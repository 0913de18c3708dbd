"""Input makers the experiments share (torch imported lazily: the catalogue and plan stay
torch-free)."""

from __future__ import annotations

from typing import Any


def _generator(device: Any, seed: int) -> Any:
    import torch

    return torch.Generator(device=torch.device(device)).manual_seed(seed)


def ssd_inputs(batch: int, steps: int, heads: int, headdim: int, dstate: int, *, groups: int = 1,
               device: Any = "cpu", dtype: Any = None, seed: int = 0) -> tuple:
    """x [B, T, H, P], dt [B, T, H] fp32 > 0, A [H] fp32 < 0, Bm, Cm [B, T, G, N], Dskip [H].

    Random, never zeros (zeros hide unwritten outputs and run faster than real data), drawn on
    `device` with a seeded generator. dt and A are drawn as Mamba-2 initialises them (dt in
    ~[0.001, 0.1], A in [-16, -1]) so the decays span short and long memories.
    """
    import torch

    dtype = dtype or torch.bfloat16
    g = _generator(device, seed)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, device=device)

    x = rnd(batch, steps, heads, headdim).to(dtype)
    dt = torch.exp(torch.rand(batch, steps, heads, generator=g, device=device) * 4.6 - 6.9)
    A = -torch.rand(heads, generator=g, device=device) * 15 - 1
    Bm = (rnd(batch, steps, groups, dstate) / dstate**0.5).to(dtype)
    Cm = (rnd(batch, steps, groups, dstate) / dstate**0.5).to(dtype)
    Dskip = rnd(heads)
    return x, dt, A, Bm, Cm, Dskip


def ssd_prefix(args: tuple, steps: int, batch: int = 1) -> tuple:
    """The first `batch` sequences and `steps` steps of SSD inputs: y's prefix depends on no
    later input (causality), so a reference run on the prefix checks the timed kernel's output."""
    x, dt, A, Bm, Cm, Dskip = args
    return (x[:batch, :steps].contiguous(), dt[:batch, :steps].contiguous(), A,
            Bm[:batch, :steps].contiguous(), Cm[:batch, :steps].contiguous(), Dskip)


def nbytes(*tensors: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)
