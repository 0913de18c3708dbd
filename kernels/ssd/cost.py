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


def _tri(steps: int, chunk: int) -> int:
    """Sum over chunks of Q(Q+1): the causal (i, j) pairs of every chunk, times two."""
    full, rest = divmod(steps, chunk)
    return full * chunk * (chunk + 1) + rest * (rest + 1)


def backward_flops(
    batch: int, steps: int, heads: int, headdim: int, dstate: int, chunk: int = 64,
    groups: int = 1, has_d: bool = False,
) -> int:
    """FLOPs of the chunked backward, the useful (causal) work counted per head like `flops`:
    per chunk of Q steps (the multiply-adds of each product, 2 per pair):
      dH = (exp(cs) dy)^T C                 2 Q P N   (gradient into the start state)
      state passing, reverse + <g, h>       4 P N     (FMA recurrence and the inner product)
      dx: M^T dy (causal) + B g^T           P Q(Q+1) + 2 Q P N
      dCB: dy x^T (causal)                  P Q(Q+1)
      dC: dCB B + exp(cs) dy h              N Q(Q+1) + 2 Q P N
      dB: dCB^T C + (w x) g                 N Q(Q+1) + 2 Q P N
    i.e. 2 (P + N) Q(Q+1) + 8 Q P N + 4 P N per chunk; D adds 4 T P (dx += D dy, dD).
    `groups` is accepted for symmetry: the dCB products with B and C are counted per head, as
    the forward counts scores per head; the kernel runs them once per group."""
    del groups
    nc = math.ceil(steps / chunk)
    per_bh = 2 * (headdim + dstate) * _tri(steps, chunk) + 8 * steps * headdim * dstate
    per_bh += 4 * nc * headdim * dstate + (4 * steps * headdim if has_d else 0)
    return batch * heads * per_bh


def backward_bytes(
    batch: int, steps: int, heads: int, headdim: int, dstate: int, chunk: int = 64,
    groups: int = 1, x_bytes: int = 2, bc_bytes: int = 2, dt_bytes: int = 4,
    has_d: bool = False,
) -> int:
    """Fewest bytes any backward must move: x, dy, dt, B, C read once and dx, ddt, dB, dC
    written once (A, D, dA, dD: H floats each), plus reading what the forward saved
    (`saved_bytes`; a schedule that recomputes it reads the inputs again instead)."""
    tokens = batch * steps
    return (
        tokens * heads * headdim * 3 * x_bytes
        + tokens * heads * dt_bytes * 2
        + tokens * groups * dstate * 4 * bc_bytes
        + heads * 4 * (4 if has_d else 2)
        + saved_bytes(batch, steps, heads, headdim, dstate, chunk, groups, x_bytes)
    )


def saved_bytes(
    batch: int, steps: int, heads: int, headdim: int, dstate: int, chunk: int = 64,
    groups: int = 1, x_bytes: int = 2,
) -> int:
    """What `ssd_chunked_fn` keeps from the forward beyond its inputs, all written by the
    forward's own launches: cs float32 [B, H, T], C.B float32 [B, nc, G, Q, Q] and the chunk
    start states in x's dtype [B, nc, H, P, N]."""
    nc = math.ceil(steps / chunk)
    return (
        batch * heads * steps * 4
        + batch * nc * groups * chunk * chunk * 4
        + batch * nc * heads * headdim * dstate * x_bytes
    )


def training_flops(
    batch: int, steps: int, heads: int, headdim: int, dstate: int, chunk: int = 64,
    groups: int = 1, has_d: bool = False,
) -> int:
    """Forward + backward FLOPs of one chunked training step."""
    fwd = flops("chunked", batch, steps, heads, headdim, dstate, chunk, has_d)
    return fwd + backward_flops(batch, steps, heads, headdim, dstate, chunk, groups, has_d)


# The decode step's state is float32: read once and written once per step.
STATE_BYTES = 4


def step_flops(b: int, heads: int, p: int, n: int) -> int:
    """One decode step (`step.py`), 5 B H P N: per state element decay*h, (dt x)*B, add, C*h and
    its sum."""
    return 5 * b * heads * p * n


def step_bytes(b: int, heads: int, p: int, n: int, groups: int, *, elt: int = 2) -> int:
    """One decode step: state read + written 2*4*B*H*P*N, plus x, y (2*B*H*P*elt), B, C
    (2*B*G*N*elt), dt (B*H*elt), A, D, dt_bias (3*4*H); `elt` bytes per activation."""
    return (2 * STATE_BYTES * b * heads * p * n + 2 * b * heads * p * elt
            + 2 * b * groups * n * elt + b * heads * elt + 3 * STATE_BYTES * heads)
