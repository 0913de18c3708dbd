"""FLOP and byte counts of a full sum of n elements (memory-bound: one add per byte-ish)."""

from __future__ import annotations


def flops(n: int) -> int:
    """n - 1 adds, counted as n."""
    return n


def bytes_moved(n: int, *, elt: int = 4) -> int:
    """x read once (n * elt) and one fp32 result written; partials (n / BLOCK) are negligible."""
    return n * elt + 4
