"""FLOP and byte counts of one decode step (README has the derivations).

`elt` is the bytes per element of the activations and the KV cache (2 for bf16); the SSM state is
float32 (4 bytes), read once and written once.
"""

from __future__ import annotations

STATE_BYTES = 4


def mamba1_flops(b: int, dim: int, n: int) -> int:
    """7 B DIM N: per state element dt*A, exp, decay*h, (dt x)*B, add, C*h and its sum."""
    return 7 * b * dim * n


def mamba1_bytes(b: int, dim: int, n: int, *, elt: int = 2) -> int:
    """State read + written 2*4*B*DIM*N, plus A (4*DIM*N), x, dt, y (3*B*DIM*elt), B, C
    (2*B*N*elt), D, dt_bias (2*4*DIM)."""
    return (2 * STATE_BYTES * b * dim * n + STATE_BYTES * dim * n + 3 * b * dim * elt
            + 2 * b * n * elt + 2 * STATE_BYTES * dim)


def mamba2_flops(b: int, heads: int, p: int, n: int) -> int:
    """5 B H P N: per state element decay*h, (dt x)*B, add, C*h and its sum."""
    return 5 * b * heads * p * n


def mamba2_bytes(b: int, heads: int, p: int, n: int, groups: int, *, elt: int = 2) -> int:
    """State read + written 2*4*B*H*P*N, plus x, y (2*B*H*P*elt), B, C (2*B*G*N*elt), dt
    (B*H*elt), A, D, dt_bias (3*4*H)."""
    return (2 * STATE_BYTES * b * heads * p * n + 2 * b * heads * p * elt
            + 2 * b * groups * n * elt + b * heads * elt + 3 * STATE_BYTES * heads)


def attention_flops(b: int, hq: int, e: int, length: int) -> int:
    """4 B Hq E L: q k^T and p v, 2 E FLOPs each per cached token."""
    return 4 * b * hq * e * length


def attention_bytes(b: int, hq: int, hkv: int, e: int, length: int, *, elt: int = 2) -> int:
    """The KV cache read once, 2*B*L*Hkv*E*elt, plus q in and o out (2*B*Hq*E*elt)."""
    return 2 * b * length * hkv * e * elt + 2 * b * hq * e * elt
