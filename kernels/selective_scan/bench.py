"""The Mamba-1 selective scan as a side of an experiment: inputs made and the kernel called the
way a Mamba-1 layer calls it (raw dt projection, `delta_bias`, `delta_softplus=True`), the
implementation chosen for the side (bundled Triton, or Mamba's CUDA kernel through `ctx.peer`),
and the correctness check of the timed output against the PyTorch reference on a causal prefix.

`ctx` is the experiment's Context (flopkb.verify.context). Loaded by path like the kernels
(`ctx.load("selective_scan", "bench")`), so it is hashed with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import forward, reference

# Reference checks run on the first PREFIX steps of one sequence of the timed inputs.
PREFIX = 256


def layer_inputs(batch: int, dim: int, steps: int, dstate: int, *, device: Any = "cpu",
                 dtype: Any = None, seed: int = 0) -> tuple:
    """(u, delta, A, Bm, Cm, Dskip, delta_bias) as a Mamba-1 layer passes them to the scan.

    u, delta [B, D, T] (delta is the raw dt projection, before bias and softplus); A [D, N] fp32
    < 0 (S4D-real init: -(1..N)); Bm, Cm [B, N, T]; Dskip, delta_bias [D] fp32, the bias the
    inverse softplus of dt drawn log-uniform in [0.001, 0.1] as Mamba initialises dt_proj's bias.
    Random, never zeros, from a seeded generator on `device`.
    """
    dtype = dtype or torch.bfloat16
    g = torch.Generator(device=torch.device(device)).manual_seed(seed)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, device=device)

    u = rnd(batch, dim, steps).to(dtype)
    delta = (0.1 * rnd(batch, dim, steps)).to(dtype)
    A = -torch.arange(1, dstate + 1, device=device, dtype=torch.float32).repeat(dim, 1)
    Bm = rnd(batch, dstate, steps).to(dtype)
    Cm = rnd(batch, dstate, steps).to(dtype)
    dt0 = torch.exp(torch.rand(dim, generator=g, device=device) * 4.6 - 6.9)
    delta_bias = dt0 + torch.log(-torch.expm1(-dt0))
    return u, delta, A, Bm, Cm, rnd(dim), delta_bias


def prefix(args: tuple, steps: int) -> tuple:
    """The first sequence's first `steps` steps: y's prefix depends on no later input."""
    u, delta, A, Bm, Cm, Dskip, bias = args
    return (u[:1, :, :steps].contiguous(), delta[:1, :, :steps].contiguous(), A,
            Bm[:1, :, :steps].contiguous(), Cm[:1, :, :steps].contiguous(), Dskip, bias)


@dataclass
class Impl:
    """fn(u, delta, A, Bm, Cm, Dskip, delta_bias) -> y [B, D, T], called as the layer calls it."""

    fn: Callable[..., Any]
    what: str

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def scan_impl(ctx: Any, side: str = "scan") -> Impl:
    """The selective scan chosen for `side`; raises PeerUnavailable for a peer that is missing
    or does not build."""
    impl = ctx.impl(side)
    if impl == "mamba_cuda":
        peer = ctx.peer("mamba_cuda")
        module, built = peer.build(search_folders(ctx))
        run = peer.scan_fn(module)
        chosen = Impl(lambda u, d, A, B, C, D, bias: run(u, d, A, B, C, D, bias, True),
                      f"peer:mamba_ssm selective_scan_cuda ({built}), delta_softplus with bias")
    elif impl == "bundled":
        chosen = Impl(lambda u, d, A, B, C, D, bias: forward.selective_scan(u, d, A, B, C, D,
                                                                            bias, True),
                      "bundled selective_scan, delta_softplus with bias")
    else:
        raise ValueError(f"no {impl!r} implementation of the selective scan")
    ctx.describe_impl(side, chosen.what)
    return chosen


def search_folders(ctx: Any) -> list[Path]:
    """Where a peer's source may lie: beside the KB, and the working folder."""
    folders = [Path.cwd()]
    if ctx.kb_root is not None:
        folders.insert(0, Path(ctx.kb_root))
    return folders


def check(ctx: Any, label: str, y: Any, args: tuple) -> None:
    """The timed output's causal prefix against the reference."""
    pre = prefix(args, min(PREFIX, args[0].shape[2]))
    ctx.check(label, y[:1, :, :pre[0].shape[2]],
              reference.selective_scan_reference(*pre[:5], pre[5], pre[6], True))


def arg_sets(ctx: Any, first: tuple, batch: int, dim: int, steps: int, dstate: int) -> list:
    """`first` plus fresh draws until one set no longer fits in L2 between its uses."""
    per_set = sum(t.numel() * t.element_size() for t in first if t is not None)
    return [first] + [layer_inputs(batch, dim, steps, dstate, device=ctx.device,
                                   seed=ctx.seed(i))
                      for i in range(1, ctx.rotations(per_set))]
