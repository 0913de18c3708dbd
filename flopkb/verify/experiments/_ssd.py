"""SSD helpers shared by the SSD experiments: kernels, correctness on the timed inputs, costs."""

from __future__ import annotations

from typing import Any

from flopkb.verify.context import Context
from flopkb.verify.experiments import _peers
from flopkb.verify.experiments._common import nbytes, ssd_inputs, ssd_prefix

# Reference checks run on the first PREFIX steps of one sequence of the timed inputs (the
# reference steps the recurrence in Python: one small kernel chain per step).
PREFIX = 256


def kernels(ctx: Context) -> dict[str, Any]:
    return {
        "chunked": ctx.load("ssd", "chunked"),
        "scan": ctx.load("ssd", "scan"),
        "reference": ctx.load("ssd", "reference"),
        "cost": ctx.load("ssd", "cost"),
    }


def shape_of(cond: dict[str, Any], steps: int, dstate: int | None = None) -> dict[str, int]:
    tokens = int(cond.get("tokens", 32768))
    return {
        "batch": max(1, tokens // steps),
        "steps": steps,
        "heads": int(cond.get("heads", 32)),
        "headdim": int(cond.get("head_dim", 64)),
        "dstate": int(dstate if dstate is not None else cond.get("state_dim", 64)),
    }


def make(ctx: Context, shape: dict[str, int], seed: int = 0) -> tuple:
    return ssd_inputs(shape["batch"], shape["steps"], shape["heads"], shape["headdim"],
                      shape["dstate"], device=ctx.device, seed=seed)


def check_against_reference(ctx: Context, label: str, y: Any, args: tuple,
                            prefix: int = PREFIX) -> None:
    """y (the timed kernel's output on `args`) vs ssd_reference on a causal prefix of `args`."""
    ref = ctx.load("ssd", "reference")
    steps = min(prefix, args[0].shape[1])
    want = ref.ssd_reference(*ssd_prefix(args, steps))
    ctx.check(label, y[:1, :steps], want)


def costs(ctx: Context, schedule: str, shape: dict[str, int], chunk: int = 64) -> tuple[int, int]:
    """(FLOPs, bytes) of one forward pass from kernels/ssd/cost.py."""
    cost = ctx.load("ssd", "cost")
    args = (shape["batch"], shape["steps"], shape["heads"], shape["headdim"], shape["dstate"])
    flops = cost.flops(schedule, *args, chunk=chunk, has_d=True)
    if schedule == "chunked":
        moved = cost.chunked_bytes(*args, chunk, has_d=True)
    else:
        moved = cost.bytes_moved(*args, has_d=True)
    return flops, moved


def arg_sets(ctx: Context, shape: dict[str, int], first: tuple) -> list[tuple]:
    """`first` plus fresh draws until one set no longer fits in L2 between its uses."""
    sets = [first]
    for seed in range(1, ctx.rotations(nbytes(*first))):
        sets.append(make(ctx, shape, seed))
    return sets


def chunked_impl(ctx: Context, chunk: int) -> tuple[Any, str]:
    """The chunked SSD to time and its name: bundled, or mamba_ssm's under `--impl peer`."""
    if ctx.impl == "peer":
        return _peers.mamba_ssd()
    k = kernels(ctx)

    def ssd_fn(*args: Any) -> Any:
        return k["chunked"].ssd_chunked(*args, chunk_size=chunk)

    return ssd_fn, "bundled"
