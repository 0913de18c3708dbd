"""FLOP and byte counts of the SSD forward, per schedule (used by bench and `flopkb verify`).

Per batch element and head, with T steps, head dim P, state N, chunk Q (nc = ceil(T/Q) chunks):
- scan:      per step, decay*state + dt x B^T (3 per state element: mul, FMA) and C contraction
             (2 per element): 5 T P N, plus dt*x (P) and D x (2P) per step.
- chunked:   the useful (causal) work of the chunked algorithm:
             intra-chunk scores C_i.B_j for j <= i:   2 N Q(Q+1)/2 per chunk,
             intra-chunk output sum_j s_ij x_j:      2 P Q(Q+1)/2 per chunk,
             chunk end states x^T (w B):            2 Q P N per chunk,
             start-state output C h:                 2 Q P N per chunk,
             state passing:                          2 P N per chunk;
             elementwise decay/mask work is left out (it is O(Q^2) per chunk with no N or P factor).
- quadratic: the chunked count with one chunk of length T and no state terms: (N + P) T(T+1).
Bytes: the fewest any schedule must move: x, dt, B, C read once, y written once (A, D: H floats).
The chunked kernels also write and read float32 chunk states; `chunked_bytes` counts that traffic.
"""

from __future__ import annotations

import math


def flops(
    schedule: str, batch: int, steps: int, heads: int, headdim: int, dstate: int,
    chunk: int = 64, has_d: bool = False,
) -> int:
    """FLOPs of one forward pass in `schedule` ("scan", "chunked" or "quadratic")."""
    bh = batch * heads
    d_term = 2 * steps * headdim if has_d else 0
    if schedule == "scan":
        return bh * (5 * steps * headdim * dstate + steps * headdim + d_term)
    if schedule == "quadratic":
        return bh * ((dstate + headdim) * steps * (steps + 1) + d_term)
    if schedule == "chunked":
        nc = math.ceil(steps / chunk)
        full, rest = divmod(steps, chunk)
        tri = full * chunk * (chunk + 1) + rest * (rest + 1)  # sum over chunks of Q(Q+1)
        per_bh = (dstate + headdim) * tri + 4 * steps * headdim * dstate
        per_bh += 2 * nc * headdim * dstate + d_term
        return bh * per_bh
    raise ValueError(f"expected schedule 'scan', 'chunked' or 'quadratic', got {schedule!r}")


def bytes_moved(
    batch: int, steps: int, heads: int, headdim: int, dstate: int, groups: int = 1,
    x_bytes: int = 2, bc_bytes: int = 2, dt_bytes: int = 4, has_d: bool = False,
) -> int:
    """Minimum device-memory traffic of one forward pass (each input read once, y written once)."""
    tokens = batch * steps
    return (
        tokens * heads * headdim * 2 * x_bytes
        + tokens * heads * dt_bytes
        + tokens * groups * dstate * 2 * bc_bytes
        + heads * 4 * (2 if has_d else 1)
    )


def chunked_bytes(
    batch: int, steps: int, heads: int, headdim: int, dstate: int, chunk: int, groups: int = 1,
    x_bytes: int = 2, bc_bytes: int = 2, dt_bytes: int = 4, has_d: bool = False,
) -> int:
    """Traffic of the four-launch chunked schedule: the minimum, plus the chunk end states (float32,
    written by chunk_state, read by state_passing), the start states (x's dtype, written by
    state_passing, read by chunk_scan), the float32 cumsum (written once, read twice) and the
    float32 per-group C.B tiles (written once, read once); re-reads served by L2 are not counted."""
    nc = math.ceil(steps / chunk)
    states = batch * nc * heads * headdim * dstate
    cs = batch * steps * heads * 4
    cb = batch * nc * groups * chunk * chunk * 4
    base = bytes_moved(batch, steps, heads, headdim, dstate, groups, x_bytes, bc_bytes, dt_bytes,
                       has_d)
    return base + states * (2 * 4 + 2 * x_bytes) + 3 * cs + 2 * cb
