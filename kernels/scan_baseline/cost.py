"""FLOP and byte counts of the unfused scan baseline.

Its useful work and its fewest bytes are the selective scan's: the same function of the same
inputs (`selective_scan/cost.py`, re-exported here). What the baseline adds is the materialised
discretisation: `materialised_bytes`, a lower bound on the traffic of its dA and dBu tensors.
"""

from __future__ import annotations

from ..selective_scan.cost import bytes_moved, flops

__all__ = ["bytes_moved", "flops", "materialised_bytes"]


def materialised_bytes(batch: int, dim: int, steps: int, dstate: int) -> int:
    """dA and dBu, fp32 [B, D, L', N] with L' = L padded to a power of two: each written once by
    the discretisation and read once by the scan's first level, 2 * 2 * 4 * B * D * L' * N."""
    padded = 1 << max(0, (steps - 1).bit_length())
    return 2 * 2 * 4 * batch * dim * padded * dstate
