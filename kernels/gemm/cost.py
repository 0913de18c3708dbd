"""FLOP and byte counts of the GEMM family, used by bench/ and by `flopkb verify`'s roofline floor.

Bytes are the fewest a kernel must move through device memory: each operand read once, the output
written once (tiles re-read from L2 are not counted, so time >= bytes / HBM bandwidth is a floor).
"""

from __future__ import annotations


def flops(m: int, n: int, k: int) -> int:
    """2 M N K: one multiply and one add per (i, j, k) of c [M, N] = a [M, K] @ b [K, N]."""
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int, *, in_bytes: int = 2, out_bytes: int = 2) -> int:
    """(M K + K N) * in_bytes + M N * out_bytes (bf16: 2/2; int8: 1/4; fp32 SIMT: 4/4)."""
    return (m * k + k * n) * in_bytes + m * n * out_bytes


def lowrank_flops(m: int, k: int, n: int, r: int) -> int:
    """2 M K r + 2 M r N for (x [M, K] @ U [K, r]) @ V [r, N]."""
    return 2 * m * k * r + 2 * m * r * n


def lowrank_bytes_moved(m: int, k: int, n: int, r: int, *, elt: int = 2) -> int:
    """x, U, V read once; t = x U written once and read once; y written once."""
    return (m * k + k * r + r * n + 2 * m * r + m * n) * elt
