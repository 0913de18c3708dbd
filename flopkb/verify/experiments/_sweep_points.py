"""The points a hook's sweep times, the claim's point always first: the point the verdict is read
at is measured before any other, so a sweep cut at the time limit still has it."""

from __future__ import annotations

from typing import Any, TypeVar

from flopkb.evidence.measurement import size_of

T = TypeVar("T")


def claim_then(claimed: T, others: tuple[T, ...] | list[T], quick: bool) -> list[T]:
    """The claim's point, then (in a full run only) the other sizes that are not it."""
    return [claimed] + ([] if quick else [x for x in others if x != claimed])


def claim_point_then_sweeps(cond: dict[str, Any], states: tuple[int, ...],
                            lengths: tuple[int, ...], quick: bool) -> list[tuple[int, int]]:
    """The (seq_len, state_dim) points A1 (`schedule`) and A2 (`ssd_vs_scan`) time: the claim's
    point; then the state sizes at the claim's length; then, in a full run only, the lengths at
    the claim's state size. A quick run keeps the first two."""
    t0, n0 = size_of(cond["seq_len"]), int(cond["state_dim"])
    points = [(t0, n0)] + [(t0, n) for n in states if n != n0]
    if quick:
        return points[:2]
    return points + [(t, n0) for t in lengths if t != t0]
