"""Counted nouns for summaries: "1 claim", "2 claims", never "1 claims"."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, the plural (default: noun + "s") unless `n` is exactly 1."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
