"""A scatter-add with many collisions, with and without torch's deterministic mode (D1 rows).

Whether determinism "may be prohibitive" depends on the operation: a full sum costs a fixed-order
tree little, while a scatter-add (`index_add_` into few bins) is atomic-bound, and its
deterministic form (torch.use_deterministic_algorithms: a sort by index, then ordered adds) is a
different algorithm. Both run on the same inputs; the global flag is restored afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from flopkb.verify.context import Context

DEFAULTS = {"elements": 16 * 2**20, "bins": 4096, "repeats": 20}


@contextlib.contextmanager
def deterministic_algorithms(on: bool) -> Iterator[None]:
    """torch.use_deterministic_algorithms(on) inside the block, the previous setting after."""
    import torch

    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(on)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def inputs(ctx: Context, n: int, bins: int, seed: int = 0) -> tuple[Any, Any]:
    """src [n] fp32 normal, index [n] int64 uniform in [0, bins): n / bins collisions per bin."""
    import torch

    g = torch.Generator(device=ctx.device).manual_seed(seed)
    src = torch.randn(n, generator=g, device=ctx.device)
    index = torch.randint(0, bins, (n,), generator=g, device=ctx.device)
    return src, index


def scatter_add(src: Any, index: Any, bins: int, deterministic: bool) -> Any:
    """out [bins] fp32 = zeros.index_add_(0, index, src), in torch's (non)deterministic mode."""
    import torch

    with deterministic_algorithms(deterministic):
        out = torch.zeros(bins, dtype=torch.float32, device=src.device)
        out.index_add_(0, index, src)
    return out


def nbytes(n: int, bins: int) -> int:
    """src and index read once, the bins read and written."""
    return n * (4 + 8) + 2 * 4 * bins


def rows(ctx: Context, n: int, bins: int, repeats: int) -> list[dict[str, Any]]:
    """Distinct results over `repeats` runs and event/graph time of both modes, checked first
    against the float64 scatter; one sweep row per mode plus their time ratio."""
    import torch

    from flopkb.evidence.stats import ratio_interval
    from flopkb.verify.experiments._reduction import distinct

    src, index = inputs(ctx, n, bins)
    want = torch.zeros(bins, dtype=torch.float64, device=src.device)
    want.index_add_(0, index, src.double())
    sets = [(src, index)] + [inputs(ctx, n, bins, seed) for seed in
                             range(1, ctx.rotations(nbytes(n, bins)))]
    timings, counts = {}, {}
    for mode, det in (("nondeterministic", False), ("deterministic", True)):
        ctx.check(f"torch index_add_ ({mode})", scatter_add(src, index, bins, det), want.float())
        counts[mode] = distinct([scatter_add(src, index, bins, det) for _ in range(repeats)])
        timings[mode] = ctx.time(f"index_add_ {mode} n={n}",
                                 lambda s, i, det=det: scatter_add(s, i, bins, det), sets,
                                 nbytes=nbytes(n, bins), graph=True, n=n, bins=bins)
    r = ratio_interval(timings["deterministic"], timings["nondeterministic"])
    return [{"row": "scatter", "op": "index_add_", "elements": n, "bins": bins,
             "repeats": repeats, "nondeterministic_distinct": counts["nondeterministic"],
             "deterministic_distinct": counts["deterministic"],
             "nondeterministic_ms": timings["nondeterministic"].median_ms,
             "deterministic_ms": timings["deterministic"].median_ms,
             "ratio": r.value, "ratio_low": r.low, "ratio_high": r.high}]
