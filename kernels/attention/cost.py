"""FLOP and byte counts of causal attention forward, [B, T, H, D] inputs, and of one decode step
over a KV cache (`decode_flops`, `decode_bytes`).

FLOPs count the useful work: q k^T and p v each take 2 D FLOPs per unmasked (t, s) pair, and a
causal mask keeps T (T + 1) / 2 pairs per batch and head (softmax's exp/max/sum are O(T^2) but
not on tensor cores and are left out, as the FlashAttention papers do). Bytes: q, k, v read once
and o written once (flash never materialises the T x T scores).
"""

from __future__ import annotations


def flops(b: int, t: int, h: int, d: int, *, causal: bool = True) -> int:
    """4 B H D * pairs, pairs = T (T + 1) / 2 causal or T^2 full."""
    pairs = t * (t + 1) // 2 if causal else t * t
    return 4 * b * h * d * pairs


def bytes_moved(b: int, t: int, h: int, d: int, *, elt: int = 2) -> int:
    """4 B T H D * elt: q, k, v in, o out."""
    return 4 * b * t * h * d * elt


def decode_flops(b: int, hq: int, e: int, length: int) -> int:
    """4 B Hq E L: q k^T and p v, 2 E FLOPs each per cached token."""
    return 4 * b * hq * e * length


def decode_bytes(b: int, hq: int, hkv: int, e: int, length: int, *, elt: int = 2) -> int:
    """The KV cache read once, 2*B*L*Hkv*E*elt, plus q in and o out (2*B*Hq*E*elt)."""
    return 2 * b * length * hkv * e * elt + 2 * b * hq * e * elt
