"""The (seq_len, state_dim) points A1 (`schedule`) and A2 (`ssd_vs_scan`) time: the claim's
point first, so the point the verdict is read at is measured before any other; then the state
sizes at the claim's length; then, in a full run only, the lengths at the claim's state size.
A quick run keeps the first two."""

from __future__ import annotations

from typing import Any

from flopkb.evidence.measurement import size_of


def claim_point_then_sweeps(cond: dict[str, Any], states: tuple[int, ...],
                            lengths: tuple[int, ...], quick: bool) -> list[tuple[int, int]]:
    t0, n0 = size_of(cond["seq_len"]), int(cond["state_dim"])
    points = [(t0, n0)] + [(t0, n) for n in states if n != n0]
    if quick:
        return points[:2]
    return points + [(t, n0) for t in lengths if t != t0]
