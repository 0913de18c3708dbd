"""FLOP and byte counts of axpby over n elements."""

from __future__ import annotations


def flops(n: int) -> int:
    """Two multiplies and one add per element."""
    return 3 * n


def bytes_moved(n: int, *, elt: int = 4) -> int:
    """x and y read once, out written once."""
    return 3 * n * elt
