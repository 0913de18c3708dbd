"""FLOP counts of the forms in reference.py and chunked.py (multiply and add counted as 2), per
call over [B, T, H] with key width K and value width V; C is the chunk (block) length."""

from __future__ import annotations

# state products per token: KDA and DPLR read the state (k^T S), write it (outer product) and
# read it for the output (q^T S); linear attention and HGRN2 write it and read it once
STATE_PRODUCTS = {"kda": 3, "dplr": 3, "linear_attention": 2, "hgrn2": 2}


def recurrent_flops(form: str, b: int, t: int, h: int, k: int, v: int) -> int:
    """FLOPs of the token-by-token form: STATE_PRODUCTS[form] x 2 K V per head and token."""
    if form not in STATE_PRODUCTS:
        raise ValueError(f"expected a form in {', '.join(STATE_PRODUCTS)}, got {form!r}")
    return STATE_PRODUCTS[form] * 2 * b * t * h * k * v


def chunked_flops(b: int, t: int, h: int, k: int, v: int, c: int) -> int:
    """FLOPs of the chunked form: per token, the intra-chunk scores (2 C K) and their product
    with the values (2 C V), the inter-chunk output (2 K V) and the state update (2 K V)."""
    if c < 1:
        raise ValueError(f"expected a positive chunk, got {c}")
    return b * t * h * (2 * c * k + 2 * c * v + 4 * k * v)
