"""FLOP and byte counts of a full sum of n elements (memory-bound: one add per byte-ish), and the
bytes of the scatter-add of `scatter.py`."""

from __future__ import annotations


def flops(n: int) -> int:
    """n - 1 adds, counted as n."""
    return n


def bytes_moved(n: int, *, elt: int = 4) -> int:
    """x read once (n * elt) and one fp32 result written; partials (n / BLOCK) are negligible."""
    return n * elt + 4


def scatter_bytes(n: int, bins: int) -> int:
    """Scatter-add of n fp32 values into `bins`: src and its int64 index read once, the bins read
    and written."""
    return n * (4 + 8) + 2 * 4 * bins
