"""The two Triton kernels of absorbed MLA decode (flash-decoding over the shared latent).

`_mla_split_kernel`, grid (NUM_SPLITS, B): program (s, b) takes the s-th of NUM_SPLITS equal
slices of sequence b's first `lengths[b]` cached tokens (the slice size is computed on the device
from the length, so the grid is static and every split has work whatever the length). It loads
the query of ALL heads once, [BLOCK_H, R] latent part and [BLOCK_H, ROPE] rope part, then streams
its tokens' 576-d latents in blocks of BLOCK_N: each block is read once and used by every head
for the scores (q_latent . c[:R] + q_rope . c[R:]) and for the output (p @ c[:R]). It writes the
normalised partial output [H, R] (fp32) and the log2-sum-exp of its scores per head.

`HEADS_AS_N` computes the transposed products (scores^T = c @ q^T, [BLOCK_N, H]; out^T = c^T @
p^T, [R, H]): the tensor-core M dimension is then the token block / the latent (64+ rows, which
Hopper's warpgroup MMA needs) instead of the 32 heads. Same arithmetic, other layout.

`_mla_combine_kernel`, grid (H, B, cdiv(V, BLOCK_V)): merges the splits of one (b, h) with the
weights 2^(lse_s - lse) and multiplies the latent output [R] by W_UV[h] [R, V] (the absorbed
value projection), writing o[b, h, v-block]. The partials it reads were just written (a few MB:
B * H * NUM_SPLITS * R * 4 bytes), so they come from L2.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _dot(a, b, acc, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """acc + a @ b. UPCAST (set under the CPU interpreter for 16-bit inputs): Triton 3.9's
    interpreter reads bf16 dot operands as raw bits; fp32 holds every bf16/fp16 value exactly, so
    an IEEE fp32 dot gives the products and fp32 sums the tensor-core dot gives."""
    if UPCAST:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    return tl.dot(a, b, acc, input_precision=PRECISION)


@triton.jit(do_not_specialize=["NUM_SPLITS", "CAP"])
def _mla_split_kernel(
    p_ql, p_qr, p_c, p_len, p_opart, p_lse,
    H, CAP, NUM_SPLITS, qk_scale,
    s_ql_b, s_ql_h, s_qr_b, s_qr_h, s_c_b, s_c_l,
    R: tl.constexpr, ROPE: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_ROPE: tl.constexpr,
    BLOCK_N: tl.constexpr, HEADS_AS_N: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
):
    pid_s = tl.program_id(0)
    pid_b = tl.program_id(1).to(tl.int64)
    # A length outside [0, CAP] is clamped: no read past the cache whatever the device holds.
    length = tl.minimum(tl.maximum(tl.load(p_len + pid_b).to(tl.int32), 0), CAP)
    per_split = tl.cdiv(tl.cdiv(length, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = pid_s * per_split
    hi = tl.minimum(lo + per_split, length)

    offs_h = tl.arange(0, BLOCK_H)
    offs_r = tl.arange(0, BLOCK_R)
    offs_e = tl.arange(0, BLOCK_ROPE)
    mask_h = offs_h < H
    mask_r = offs_r < R
    mask_e = offs_e < ROPE
    p_c_b = p_c + pid_b * s_c_b
    if HEADS_AS_N:
        # q^T: [BLOCK_R, BLOCK_H] and [BLOCK_ROPE, BLOCK_H], loaded transposed from [B, H, *].
        b_ql = tl.load(p_ql + pid_b * s_ql_b + offs_h[None, :] * s_ql_h + offs_r[:, None],
                       mask=mask_r[:, None] & mask_h[None, :], other=0.0)
        b_qr = tl.load(p_qr + pid_b * s_qr_b + offs_h[None, :] * s_qr_h + offs_e[:, None],
                       mask=mask_e[:, None] & mask_h[None, :], other=0.0)
        acc = tl.zeros([BLOCK_R, BLOCK_H], dtype=tl.float32)
    else:
        b_ql = tl.load(p_ql + pid_b * s_ql_b + offs_h[:, None] * s_ql_h + offs_r[None, :],
                       mask=mask_h[:, None] & mask_r[None, :], other=0.0)
        b_qr = tl.load(p_qr + pid_b * s_qr_b + offs_h[:, None] * s_qr_h + offs_e[None, :],
                       mask=mask_h[:, None] & mask_e[None, :], other=0.0)
        acc = tl.zeros([BLOCK_H, BLOCK_R], dtype=tl.float32)
    m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)

    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < hi
        p_row = p_c_b + offs_n.to(tl.int64)[:, None] * s_c_l
        b_kv = tl.load(p_row + offs_r[None, :], mask=mask_n[:, None] & mask_r[None, :], other=0.0)
        b_kr = tl.load(p_row + R + offs_e[None, :], mask=mask_n[:, None] & mask_e[None, :],
                       other=0.0)
        if HEADS_AS_N:
            b_s = _dot(b_kv, b_ql, tl.zeros([BLOCK_N, BLOCK_H], tl.float32), PRECISION, UPCAST)
            b_s = _dot(b_kr, b_qr, b_s, PRECISION, UPCAST)
            b_s = tl.where(mask_n[:, None], b_s * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(b_s, 0))
            alpha = tl.exp2(m_i - m_new)
            b_p = tl.exp2(b_s - m_new[None, :])
            l_i = l_i * alpha + tl.sum(b_p, 0)
            acc = acc * alpha[None, :]
            acc = _dot(tl.trans(b_kv), b_p.to(b_kv.dtype), acc, PRECISION, UPCAST)
        else:
            b_s = _dot(b_ql, tl.trans(b_kv), tl.zeros([BLOCK_H, BLOCK_N], tl.float32), PRECISION,
                       UPCAST)
            b_s = _dot(b_qr, tl.trans(b_kr), b_s, PRECISION, UPCAST)
            b_s = tl.where(mask_n[None, :], b_s * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(b_s, 1))
            alpha = tl.exp2(m_i - m_new)
            b_p = tl.exp2(b_s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(b_p, 1)
            acc = acc * alpha[:, None]
            acc = _dot(b_p.to(b_kv.dtype), b_kv, acc, PRECISION, UPCAST)
        m_i = m_new

    # An empty split (lo >= hi) writes lse = -inf and a zero output: weight 0 in the combine.
    has = l_i > 0
    inv_l = tl.where(has, 1.0 / tl.where(has, l_i, 1.0), 0.0)
    lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
    row = (pid_b * H + offs_h) * NUM_SPLITS + pid_s
    tl.store(p_lse + row, lse, mask=mask_h)
    if HEADS_AS_N:
        p_o = p_opart + row[None, :] * R + offs_r[:, None]
        tl.store(p_o, acc * inv_l[None, :], mask=mask_r[:, None] & mask_h[None, :])
    else:
        p_o = p_opart + row[:, None] * R + offs_r[None, :]
        tl.store(p_o, acc * inv_l[:, None], mask=mask_h[:, None] & mask_r[None, :])


@triton.jit(do_not_specialize=["NUM_SPLITS"])
def _mla_combine_kernel(
    p_opart, p_lse, p_wuv, p_out,
    H, NUM_SPLITS, s_out_b, s_out_h,
    R: tl.constexpr, V: tl.constexpr,
    BLOCK_S: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr,
):
    pid_h = tl.program_id(0).to(tl.int64)
    pid_b = tl.program_id(1).to(tl.int64)
    pid_v = tl.program_id(2)
    row0 = (pid_b * H + pid_h) * NUM_SPLITS

    # The largest split lse, then the sum of 2^(lse_s - max): vectors, reduced after the loop.
    m_vec = tl.full([BLOCK_S], float("-inf"), dtype=tl.float32)
    for s0 in range(0, NUM_SPLITS, BLOCK_S):
        offs_s = s0 + tl.arange(0, BLOCK_S)
        lse = tl.load(p_lse + row0 + offs_s, mask=offs_s < NUM_SPLITS, other=float("-inf"))
        m_vec = tl.maximum(m_vec, lse)
    m = tl.max(m_vec, 0)
    # Every split empty (length 0): all weights 0 and the output 0, not NaN.
    m = tl.where(m == float("-inf"), 0.0, m)
    t_vec = tl.zeros([BLOCK_S], dtype=tl.float32)
    for s0 in range(0, NUM_SPLITS, BLOCK_S):
        offs_s = s0 + tl.arange(0, BLOCK_S)
        lse = tl.load(p_lse + row0 + offs_s, mask=offs_s < NUM_SPLITS, other=float("-inf"))
        t_vec += tl.exp2(lse - m)
    total = tl.sum(t_vec, 0)
    inv_total = tl.where(total > 0, 1.0 / tl.where(total > 0, total, 1.0), 0.0)

    offs_v = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    mask_v = offs_v < V
    acc = tl.zeros([BLOCK_V], dtype=tl.float32)
    for k0 in range(0, R, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < R
        o_k = tl.zeros([BLOCK_K], dtype=tl.float32)
        for s0 in range(0, NUM_SPLITS, BLOCK_S):
            offs_s = s0 + tl.arange(0, BLOCK_S)
            mask_s = offs_s < NUM_SPLITS
            lse = tl.load(p_lse + row0 + offs_s, mask=mask_s, other=float("-inf"))
            w = tl.exp2(lse - m) * inv_total
            b_part = tl.load(p_opart + (row0 + offs_s)[:, None] * R + offs_k[None, :],
                             mask=mask_s[:, None] & mask_k[None, :], other=0.0)
            o_k += tl.sum(w[:, None] * b_part, 0)
        b_w = tl.load(p_wuv + pid_h * R * V + offs_k[:, None] * V + offs_v[None, :],
                      mask=mask_k[:, None] & mask_v[None, :], other=0.0).to(tl.float32)
        acc += tl.sum(o_k[:, None] * b_w, 0)
    tl.store(p_out + pid_b * s_out_b + pid_h * s_out_h + offs_v,
             acc.to(p_out.dtype.element_ty), mask=mask_v)
