"""SSD as a side of an experiment: inputs made the way Mamba-2 initialises them, the chunked
implementation chosen for the side (bundled, or a peer through `ctx.peer`), the correctness check
of the timed output against the PyTorch reference on a causal prefix, and the costs of each call.

`ctx` is the experiment's Context (flopkb.verify.context): `device`, `seed`, `rotations`, `impl`,
`describe_impl`, `peer`, `check`. Loaded by path like the kernels (`ctx.load("ssd", "bench")`),
so it is hashed with them and a KB's own ssd/ brings its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import chunked, cost, reference, scan

# Reference checks run on the first PREFIX steps of one sequence of the timed inputs (the
# reference steps the recurrence in Python: one small kernel chain per step).
PREFIX = 256


def nbytes(*tensors: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def ssd_inputs(batch: int, steps: int, heads: int, headdim: int, dstate: int, *, groups: int = 1,
               device: Any = "cpu", dtype: Any = None, seed: int = 0) -> tuple:
    """x [B, T, H, P], dt [B, T, H] fp32 > 0, A [H] fp32 < 0, Bm, Cm [B, T, G, N], Dskip [H].

    Random, never zeros (zeros hide unwritten outputs and run faster than real data), drawn on
    `device` with a seeded generator. dt and A are drawn as Mamba-2 initialises them (dt in
    ~[0.001, 0.1], A in [-16, -1]) so the decays span short and long memories.
    """
    dtype = dtype or torch.bfloat16
    g = torch.Generator(device=torch.device(device)).manual_seed(seed)

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


def kernels() -> dict[str, Any]:
    """The modules an SSD experiment times and checks against."""
    return {"chunked": chunked, "scan": scan, "reference": reference, "cost": cost}


def shape_of(cond: dict[str, Any], steps: int, dstate: int | None = None) -> dict[str, int]:
    tokens = int(cond.get("tokens", 32768))
    return {
        "batch": max(1, tokens // steps),
        "steps": steps,
        "heads": int(cond.get("heads", 32)),
        "headdim": int(cond.get("head_dim", 64)),
        "dstate": int(dstate if dstate is not None else cond.get("state_dim", 64)),
    }


def make(ctx: Any, shape: dict[str, int], seed: int = 0) -> tuple:
    return ssd_inputs(shape["batch"], shape["steps"], shape["heads"], shape["headdim"],
                      shape["dstate"], device=ctx.device, seed=ctx.seed(seed))


def check_against_reference(ctx: Any, label: str, y: Any, args: tuple,
                            prefix: int = PREFIX) -> None:
    """y (the timed kernel's output on `args`) vs ssd_reference on a causal prefix of `args`."""
    steps = min(prefix, args[0].shape[1])
    want = reference.ssd_reference(*ssd_prefix(args, steps))
    ctx.check(label, y[:1, :steps], want)


def costs(schedule: str, shape: dict[str, int], chunk: int = 64) -> tuple[int, int]:
    """(FLOPs, bytes) of one forward pass from cost.py."""
    args = (shape["batch"], shape["steps"], shape["heads"], shape["headdim"], shape["dstate"])
    flops = cost.flops(schedule, *args, chunk=chunk, has_d=True)
    if schedule == "chunked":
        moved = cost.chunked_bytes(*args, chunk, has_d=True)
    else:
        moved = cost.bytes_moved(*args, has_d=True)
    return flops, moved


def arg_sets(ctx: Any, shape: dict[str, int], first: tuple) -> list[tuple]:
    """`first` plus fresh draws until one set no longer fits in L2 between its uses."""
    sets = [first]
    for seed in range(1, ctx.rotations(nbytes(*first))):
        sets.append(make(ctx, shape, seed))
    return sets


@dataclass
class Impl:
    """A chunked-SSD implementation: `fn(*prepare(ssd_args))` -> y [B, T, H, P].

    `prepare` turns SSD's arguments (x, dt, A, Bm, Cm, Dskip) into the implementation's own
    layout outside the timed region (fla wants B and C per head, v = x * dt); `fn` is what is
    timed."""

    fn: Callable[..., Any]
    what: str
    prepare: Callable[[tuple], tuple] = tuple

    def __call__(self, *args: Any) -> Any:
        return self.fn(*self.prepare(args))

    def sets(self, arg_sets: list[tuple]) -> list[tuple]:
        return [self.prepare(a) for a in arg_sets]


def chunked_impl(ctx: Any, chunk: int, side: str = "ssd") -> Impl:
    """The chunked SSD chosen for `side` in this combination. Peers: mamba_ssm's
    `mamba_chunk_scan_combined`; fla's `chunk_simple_gla` with q = C and k = B per head,
    v = x * dt, g = dt * A, scale 1, and the D skip added after it (one elementwise pass the
    fused kernels do not need). Raises PeerUnavailable when the peer cannot be loaded."""
    impl = ctx.impl(side)
    if impl == "mamba_ssm":
        combined, version = ctx.peer("mamba_ssm").chunk_scan_combined()

        def run_mamba(x, dt, A, Bm, Cm, Dskip=None):
            return combined(x, dt, A, Bm, Cm, chunk, D=Dskip)

        chosen = Impl(run_mamba, f"peer:{version} mamba_chunk_scan_combined (chunk {chunk})")
    elif impl == "fla":
        ops, version = ctx.peer("fla").ops()
        chosen = Impl(gla_as_ssd(ops["chunk_simple_gla"]),
                      f"peer:{version} chunk_simple_gla (q=C, k=B per head, v=x*dt, g=dt*A) "
                      "+ D skip", prepare=gla_inputs)
    elif impl == "bundled":

        def ssd_fn(*args: Any) -> Any:
            return chunked.ssd_chunked(*args, chunk_size=chunk)

        chosen = Impl(ssd_fn, f"bundled ssd_chunked (chunk {chunk})")
    else:
        raise ValueError(f"no {impl!r} implementation of chunked SSD")
    ctx.describe_impl(side, chosen.what)
    return chosen


def gla_inputs(args: tuple) -> tuple:
    """SSD arguments in simple GLA's layout: q, k [B, T, H, N], v [B, T, H, P], g [B, T, H]."""
    x, dt, A, Bm, Cm, Dskip = args
    batch, steps, heads, _ = x.shape
    n = Bm.shape[-1]
    q = Cm.expand(batch, steps, heads, n).contiguous()
    k = Bm.expand(batch, steps, heads, n).contiguous()
    v = (x.float() * dt[..., None]).to(x.dtype)
    return q, k, v, (dt * A).contiguous(), x, Dskip


def gla_as_ssd(gla: Callable[..., Any]) -> Callable[..., Any]:
    def run(q, k, v, g, x, Dskip):
        y = gla(q, k, v, g=g, scale=1.0)[0]
        return y if Dskip is None else torch.addcmul(y, x, Dskip[:, None].to(x.dtype))

    return run
