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


def window_pairs(t: int, window: int | None) -> int:
    """Unmasked (query, key) pairs of causal window attention over T tokens, per batch and head:
    sum over t of min(t + 1, W); W(W + 1)/2 + (T - W) W once T > W, T(T + 1)/2 otherwise."""
    if window is None or window >= t:
        return t * (t + 1) // 2
    return window * (window + 1) // 2 + (t - window) * window


def window_flops(b: int, t: int, hq: int, d: int, *, window: int | None) -> int:
    """4 B Hq D * pairs = 4 T W_eff D Hq B, W_eff = pairs / T: only the pairs the window keeps
    (the masked parts of edge blocks a kernel computes and discards are not useful work)."""
    return 4 * b * hq * d * window_pairs(t, window)


def window_bytes(b: int, t: int, hq: int, hkv: int, d: int, *, elt: int = 2) -> int:
    """q in and o out (2 B T Hq D), k and v in (2 B T Hkv D), each once, times elt."""
    return 2 * b * t * (hq + hkv) * d * elt


def decode_attended(length: int, window: int | None) -> int:
    """Cached tokens one decode step attends: min(length, W)."""
    return length if window is None else min(length, window)


def split_kv_decode_flops(b: int, hq: int, d: int, length: int, *,
                          window: int | None = None) -> int:
    """4 B Hq D S, S = decode_attended(length, window): q k^T and p v, 2 D FLOPs per key."""
    return 4 * b * hq * d * decode_attended(length, window)


def split_kv_decode_bytes(b: int, hq: int, hkv: int, d: int, length: int, *,
                          window: int | None = None, elt: int = 2) -> int:
    """The attended K and V read once, 2 B S Hkv D elt, plus q in and o out, 2 B Hq D elt. The
    split partials (fp32, B Hq splits D) are the kernel's own traffic, not part of the floor."""
    s = decode_attended(length, window)
    return 2 * b * s * hkv * d * elt + 2 * b * hq * d * elt


def decode_flops(b: int, hq: int, e: int, length: int) -> int:
    """4 B Hq E L: q k^T and p v, 2 E FLOPs each per cached token."""
    return 4 * b * hq * e * length


def decode_bytes(b: int, hq: int, hkv: int, e: int, length: int, *, elt: int = 2) -> int:
    """The KV cache read once, 2*B*L*Hkv*E*elt, plus q in and o out (2*B*Hq*E*elt)."""
    return 2 * b * length * hkv * e * elt + 2 * b * hq * e * elt
