"""Triton kernels shared by the chunked and quadratic SSD schedules.

Notation (one head h of group g): cs = cumulative sum of dt*A over a segment (a chunk, or the whole
sequence for the quadratic form), kept in log2 units so every decay is one exp2.

- `_chunk_bmm_kernel`: per (batch, chunk, group, block of rows), C_i . B_j for the causal blocks,
  shared by all heads of the group.
- `_chunk_state_kernel`: per (batch, chunk, head), the segment cumsum `cs` and, optionally, the
  chunk's own end state S_c = sum_s exp(cs_last - cs_s) dt_s x_s B_s^T  ([P, N], tensor cores).
  With REVERSE (backward), the gradient its outputs send to the chunk's start state instead:
  dH_c = sum_i exp(cs_i) dy_i C_i^T (x -> dy, B -> C), and cs is not stored again.
- `_state_passing_kernel`: per (batch, head, slice of the state), the recurrence across chunks,
  h_c = exp(cs_last(c-1)) h_{c-1} + S_{c-1}, writing the state each chunk starts from. With
  REVERSE (backward) the same recurrence runs from the last chunk down on dH, g_c = dH_c +
  exp(cs_last(c)) g_{c+1}, writing g_{c+1} (the gradient of chunk c's end state S_c) and the
  slice's share of exp(cs_last(c)) <g_{c+1}, h_c> (part of dL/dcs_last, `_bwd_kernels.py`).
- `_chunk_scan_kernel`: per (batch, chunk, head, block of rows), the output
  y_i = exp(cs_i) C_i h_c  +  sum_{j<=i in chunk} (C_i . B_j) exp(cs_i - cs_j) dt_j x_j  +  D x_i,
  tiled like flash attention over column blocks j; C_i . B_j comes from `_chunk_bmm_kernel` (or is
  computed in place, for the quadratic form), the product with x runs on tensor cores.

PER_CHANNEL (constexpr, `per_channel.py`): the decay is one log-decay per (head, state dim), g
[B, T, H, N], its in-chunk cumsum G [B, T, H, N] (log2 units) replaces cs. The chunk state
weights B (N wide) instead of x; the state passing decays each state column by its own channel;
the chunk scan scales C by exp(G_i) for the start state and, since the decay no longer factors
out of C_i . B_j, rescales both tiles against a reference row r before the score dot:
C_i exp(G_i - G_r) . B_j exp(G_r - G_j) (`_pc_scores`). The scalar path's code is unchanged by
these branches (constexpr: not compiled into it).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _dot(a, b, DOT_PREC: tl.constexpr, UPCAST: tl.constexpr):
    # Triton's CPU interpreter multiplies bf16 operands as raw uint16 bits (triton 3.9), so under
    # TRITON_INTERPRET=1 bf16 dots run on float32 copies; compiled kernels never take this branch.
    if UPCAST:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        return tl.dot(a, b, input_precision=DOT_PREC)


@triton.jit
def _chunk_state_kernel(
    x_ptr, dt_ptr, A_ptr, B_ptr, states_ptr, cs_ptr,
    T, H, P, N, HEADS_PER_GROUP, CHUNK, NCHUNKS,
    COMPUTE_STATE: tl.constexpr, DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_K: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    REVERSE: tl.constexpr = False, PER_CHANNEL: tl.constexpr = False,
):
    """cs [B, H, T] from dt*A; with PER_CHANNEL, A_ptr is the log-decay g [B, T, H, N] and cs
    the in-chunk cumsum G [B, T, H, N]."""
    # Heads vary fastest across programs: neighbours share the chunk's B rows in L2.
    pid_bh = tl.program_id(0)
    i_c = tl.program_id(1)
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    G = H // HEADS_PER_GROUP
    i_g = i_h // HEADS_PER_GROUP
    offs_k = tl.arange(0, BLOCK_K)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    mask_p = offs_p < P
    mask_n = offs_n < N
    if PER_CHANNEL:
        b_run = tl.zeros([BLOCK_N], dtype=tl.float32)
    else:
        b_a = tl.load(A_ptr + i_h).to(tl.float32) * 1.4426950408889634
    t_start = i_c * CHUNK
    if not PER_CHANNEL:
        b_run = b_a * 0.0
    b_S = tl.zeros([BLOCK_P, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, CHUNK, BLOCK_K):
        offs_t = t_start + k0 + offs_k
        mask_t = (k0 + offs_k < CHUNK) & (offs_t < T)
        b_dt = tl.load(dt_ptr + (i_b * T + offs_t) * H + i_h, mask=mask_t, other=0.0)
        b_dt = b_dt.to(tl.float32)
        if PER_CHANNEL:
            m_tn = mask_t[:, None] & mask_n[None, :]
            p_tn = ((i_b * T + offs_t[:, None]) * H + i_h) * N + offs_n[None, :]
            b_g = tl.load(A_ptr + p_tn, mask=m_tn, other=0.0).to(tl.float32) * 1.4426950408889634
            b_cs = b_run[None, :] + tl.cumsum(b_g, axis=0)
            tl.store(cs_ptr + p_tn, b_cs, mask=m_tn)
            b_new = b_run + tl.sum(b_g, axis=0)
        else:
            b_cs = b_run + tl.cumsum(b_dt * b_a, axis=0)
            if not REVERSE:
                tl.store(cs_ptr + pid_bh.to(tl.int64) * T + offs_t, b_cs, mask=mask_t)
            b_new = b_run + tl.sum(b_dt * b_a, axis=0)
        if COMPUTE_STATE:
            if PER_CHANNEL:
                b_x = tl.load(
                    x_ptr + ((i_b * T + offs_t[:, None]) * H + i_h) * P + offs_p[None, :],
                    mask=mask_t[:, None] & mask_p[None, :], other=0.0,
                )
                b_B = tl.load(
                    B_ptr + ((i_b * T + offs_t[:, None]) * G + i_g) * N + offs_n[None, :],
                    mask=m_tn, other=0.0,
                )
                # The weight differs per channel, so it goes on B; exponents <= 0 as below.
                b_w = b_dt[:, None] * tl.exp2(b_new[None, :] - b_cs)
                b_Bw = (b_B.to(tl.float32) * b_w).to(b_x.dtype)
                b_S = b_S * tl.exp2(b_new - b_run)[None, :]
                b_S += _dot(tl.trans(b_x), b_Bw, DOT_PREC, UPCAST_DOT)
            else:
                # Forward: a block-level recurrence keeps every exponent <= 0 (S <- exp(block decay)
                # S + input). Backward: the dH weights exp(cs_i) are <= 1 already, no rescaling.
                b_w = tl.exp2(b_cs) if REVERSE else b_dt * tl.exp2(b_new - b_cs)
                b_x = tl.load(
                    x_ptr + ((i_b * T + offs_t[:, None]) * H + i_h) * P + offs_p[None, :],
                    mask=mask_t[:, None] & mask_p[None, :], other=0.0,
                )
                b_B = tl.load(
                    B_ptr + ((i_b * T + offs_t[:, None]) * G + i_g) * N + offs_n[None, :],
                    mask=mask_t[:, None] & mask_n[None, :], other=0.0,
                )
                # Weight x (P wide) rather than B (N wide); B goes to the dot as loaded.
                b_xw = (b_x.to(tl.float32) * b_w[:, None]).to(b_x.dtype)
                if REVERSE:
                    b_S += _dot(tl.trans(b_xw), b_B.to(b_x.dtype), DOT_PREC, UPCAST_DOT)
                else:
                    b_S = b_S * tl.exp2(b_new - b_run) + _dot(
                        tl.trans(b_xw), b_B, DOT_PREC, UPCAST_DOT
                    )
        b_run = b_new
    if COMPUTE_STATE:
        p_S = (
            states_ptr + ((i_b * NCHUNKS + i_c) * H + i_h) * P * N
            + offs_p[:, None] * N + offs_n[None, :]
        )
        tl.store(p_S, b_S, mask=mask_p[:, None] & mask_n[None, :])


@triton.jit
def _last_decay(cs_ptr, p_cs, i_b, i_h, offs, mask, c, T, H, N, CHUNK,
                PER_CHANNEL: tl.constexpr):
    """log2 of chunk c's total decay: a scalar, or per state element (its channel offs % N)."""
    if PER_CHANNEL:
        t_last = tl.minimum((c + 1) * CHUNK, T) - 1
        return tl.load(cs_ptr + ((i_b * T + t_last) * H + i_h) * N + offs % N, mask=mask,
                       other=0.0)
    else:
        return tl.load(p_cs + tl.minimum((c + 1) * CHUNK, T) - 1)


@triton.jit
def _state_passing_kernel(
    states_ptr, cs_ptr, out_ptr, hstart_ptr, lpart_ptr,
    T, H, N, PN, CHUNK, NCHUNKS,
    BLOCK: tl.constexpr, REVERSE: tl.constexpr = False, PER_CHANNEL: tl.constexpr = False,
):
    pid = tl.program_id(0)
    pid_bh = tl.program_id(1)
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < PN
    p_cs = cs_ptr + pid_bh.to(tl.int64) * T
    b_h = tl.zeros([BLOCK], dtype=tl.float32)
    # Prefetch the next chunk's state and decay while this one is combined: the loads do not
    # depend on the carried state, so only the FMA chain is serial.
    c_first = NCHUNKS - 1 if REVERSE else 0
    n_s = tl.load(states_ptr + ((i_b * NCHUNKS + c_first) * H + i_h) * PN + offs, mask=mask,
                  other=0.0)
    n_cs = _last_decay(cs_ptr, p_cs, i_b, i_h, offs, mask, c_first, T, H, N, CHUNK, PER_CHANNEL)
    for k in range(NCHUNKS):
        c = NCHUNKS - 1 - k if REVERSE else k
        b_s = n_s
        b_decay = tl.exp2(n_cs)
        c_next = (c + NCHUNKS - 1) % NCHUNKS if REVERSE else (c + 1) % NCHUNKS
        n_s = tl.load(
            states_ptr + ((i_b * NCHUNKS + c_next) * H + i_h) * PN + offs, mask=mask, other=0.0
        )
        n_cs = _last_decay(cs_ptr, p_cs, i_b, i_h, offs, mask, c_next, T, H, N, CHUNK,
                           PER_CHANNEL)
        # Stored in x's dtype: the next stage rounds it to that for its tensor-core dot anyway.
        tl.store(
            out_ptr + ((i_b * NCHUNKS + c) * H + i_h) * PN + offs,
            b_h.to(out_ptr.dtype.element_ty), mask=mask,
        )
        if REVERSE:
            # This slice's share of exp(cs_last) <g_{c+1}, h_c>, h_c the forward's start state.
            b_hc = tl.load(hstart_ptr + ((i_b * NCHUNKS + c) * H + i_h) * PN + offs,
                           mask=mask, other=0.0)
            tl.store(lpart_ptr + (pid_bh.to(tl.int64) * NCHUNKS + c) * tl.num_programs(0) + pid,
                     b_decay * tl.sum(b_h * b_hc.to(tl.float32), axis=0))
        b_h = b_decay * b_h + b_s


@triton.jit
def _chunk_bmm_kernel(
    B_ptr, C_ptr, cb_ptr,
    T, G, N, CHUNK, NCHUNKS, ROW_BLOCKS,
    DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """CB[b, c, g, i, j] = C_i . B_j for j-block <= i-block of each chunk, once per GROUP: every
    head of the group reuses it (with G = 1 this saves H - 1 of H score products)."""
    pid_bg = tl.program_id(0)
    pid1 = tl.program_id(1)
    i_c = pid1 // ROW_BLOCKS
    i_m = pid1 % ROW_BLOCKS
    i_b = (pid_bg // G).to(tl.int64)
    i_g = pid_bg % G
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    t_chunk = i_c * CHUNK
    offs_i = t_chunk + i_m * BLOCK_M + offs_m
    mask_i = (i_m * BLOCK_M + offs_m < CHUNK) & (offs_i < T)
    b_C = tl.load(
        C_ptr + ((i_b * T + offs_i[:, None]) * G + i_g) * N + offs_n[None, :],
        mask=mask_i[:, None] & mask_n[None, :], other=0.0,
    )
    p_cb = cb_ptr + ((i_b * NCHUNKS + i_c) * G + i_g) * CHUNK * CHUNK
    rows = i_m * BLOCK_M + offs_m
    for j in range(0, i_m + 1):
        offs_j = t_chunk + j * BLOCK_M + offs_m
        mask_j = offs_j < T
        b_B = tl.load(
            B_ptr + ((i_b * T + offs_j[:, None]) * G + i_g) * N + offs_n[None, :],
            mask=mask_j[:, None] & mask_n[None, :], other=0.0,
        )
        b_s = _dot(b_C, tl.trans(b_B), DOT_PREC, UPCAST_DOT)
        cols = j * BLOCK_M + offs_m
        tl.store(p_cb + rows[:, None] * CHUNK + cols[None, :], b_s,
                 mask=(rows < CHUNK)[:, None] & (cols < CHUNK)[None, :])


@triton.jit
def _pc_scores(
    b_C, b_gcs_i, mask_i, gcs_ptr, B_ptr, x_ptr, i_b, i_h, i_g, j, i_m, t_chunk, offs_m, offs_n,
    mask_n, T, H, G, N, DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, SUB_M: tl.constexpr, SPREAD_MAX: tl.constexpr,
):
    """Per-channel scores S_ij = sum_n C_in B_jn exp(G_in - G_jn) for row block i_m, column
    block j (b_C float32 [BLOCK_M, N], b_gcs_i = G of the rows, log2 units).

    Both tiles are rescaled against the last row r of column block j, C_i exp(G_i - G_r) and
    B_j exp(G_r - G_j), and multiplied on tensor cores. Off the diagonal (i > r >= j) both
    exponents are <= 0. On the diagonal block the C exponent reaches the block's whole decay and
    the B exponent its negative, past the float range once that exceeds 2^SPREAD_MAX (100 for
    bf16 / fp32 tiles, 10 for fp16, whose range ends at 2^16); such a block is recomputed in
    SUB_M-column slices, each against its own last row (rows before the slice are causally out
    and zeroed), so only a SUB_M-step decay beyond that could overflow. The tiles go to the dot
    in x's dtype."""
    DT = x_ptr.dtype.element_ty
    offs_j = t_chunk + j * BLOCK_M + offs_m
    mask_j = offs_j < T
    m_jn = mask_j[:, None] & mask_n[None, :]
    m_in = mask_i[:, None] & mask_n[None, :]
    p_g = gcs_ptr + ((i_b * T + offs_j[:, None]) * H + i_h) * N + offs_n[None, :]
    b_gcs_j = tl.load(p_g, mask=m_jn, other=0.0)
    b_B = tl.load(B_ptr + ((i_b * T + offs_j[:, None]) * G + i_g) * N + offs_n[None, :],
                  mask=m_jn, other=0.0).to(tl.float32)
    t_ref = tl.minimum(t_chunk + j * BLOCK_M + BLOCK_M, T) - 1
    b_ref = tl.load(gcs_ptr + ((i_b * T + t_ref) * H + i_h) * N + offs_n, mask=mask_n, other=0.0)
    spread = tl.max(tl.max(tl.where(m_in, b_gcs_i - b_ref[None, :], 0.0), axis=1), axis=0)
    if (j == i_m) & (spread > SPREAD_MAX):
        b_s = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
        for sb in tl.static_range(BLOCK_M // SUB_M):
            t_r = tl.minimum(t_chunk + j * BLOCK_M + (sb + 1) * SUB_M, T) - 1
            b_r = tl.load(gcs_ptr + ((i_b * T + t_r) * H + i_h) * N + offs_n, mask=mask_n,
                          other=0.0)
            rows_in = (offs_m // SUB_M >= sb)[:, None] & m_in
            cols_in = (offs_m // SUB_M == sb)[:, None] & m_jn
            e_c = tl.where(rows_in, b_gcs_i - b_r[None, :], float("-inf"))
            e_b = tl.where(cols_in, b_r[None, :] - b_gcs_j, float("-inf"))
            b_Ct = (b_C * tl.exp2(e_c)).to(DT)
            b_Bt = (b_B * tl.exp2(e_b)).to(DT)
            b_s += _dot(b_Ct, tl.trans(b_Bt), DOT_PREC, UPCAST_DOT)
    else:
        e_c = tl.where(m_in, b_gcs_i - b_ref[None, :], float("-inf"))
        b_Ct = (b_C * tl.exp2(e_c)).to(DT)
        b_Bt = (b_B * tl.exp2(b_ref[None, :] - b_gcs_j)).to(DT)
        b_s = _dot(b_Ct, tl.trans(b_Bt), DOT_PREC, UPCAST_DOT)
    return b_s


@triton.jit
def _chunk_scan_kernel(
    x_ptr, dt_ptr, B_ptr, C_ptr, D_ptr, cs_ptr, hin_ptr, cb_ptr, y_ptr,
    T, H, P, N, HEADS_PER_GROUP, CHUNK, NCHUNKS, ROW_BLOCKS,
    HAS_STATE: tl.constexpr, HAS_CB: tl.constexpr, HAS_D: tl.constexpr,
    DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    PER_CHANNEL: tl.constexpr = False, SUB_M: tl.constexpr = 16, SPREAD_MAX: tl.constexpr = 100.0,
):
    """y per row block; with PER_CHANNEL, cs_ptr is G [B, T, H, N] and scores come from
    `_pc_scores` (HAS_CB is then ignored)."""
    # Heads vary fastest across programs: neighbours share C rows and CB tiles in L2.
    pid_bh = tl.program_id(0)
    pid0 = tl.program_id(1)
    i_c = pid0 // ROW_BLOCKS
    i_m = pid0 % ROW_BLOCKS
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    G = H // HEADS_PER_GROUP
    i_g = i_h // HEADS_PER_GROUP
    offs_m = tl.arange(0, BLOCK_M)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    mask_p = offs_p < P
    mask_n = offs_n < N
    t_chunk = i_c * CHUNK
    offs_i = t_chunk + i_m * BLOCK_M + offs_m
    mask_i = (i_m * BLOCK_M + offs_m < CHUNK) & (offs_i < T)
    p_cs = cs_ptr + pid_bh.to(tl.int64) * T
    if not PER_CHANNEL:
        b_cs_i = tl.load(p_cs + offs_i, mask=mask_i, other=0.0)
    b_C = tl.load(
        C_ptr + ((i_b * T + offs_i[:, None]) * G + i_g) * N + offs_n[None, :],
        mask=mask_i[:, None] & mask_n[None, :], other=0.0,
    )
    XT = x_ptr.dtype.element_ty
    if PER_CHANNEL:
        p_gi = cs_ptr + ((i_b * T + offs_i[:, None]) * H + i_h) * N + offs_n[None, :]
        b_gcs_i = tl.load(p_gi, mask=mask_i[:, None] & mask_n[None, :], other=0.0)
        b_C = b_C.to(tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_P], dtype=tl.float32)
    if HAS_STATE:
        p_h = (
            hin_ptr + ((i_b * NCHUNKS + i_c) * H + i_h) * P * N
            + offs_p[:, None] * N + offs_n[None, :]
        )
        b_hin = tl.load(p_h, mask=mask_p[:, None] & mask_n[None, :], other=0.0)
        if PER_CHANNEL:
            b_Cd = (b_C * tl.exp2(b_gcs_i)).to(XT)
            acc = _dot(b_Cd, tl.trans(b_hin.to(XT)), DOT_PREC, UPCAST_DOT)
        else:
            acc = _dot(b_C, tl.trans(b_hin.to(b_C.dtype)), DOT_PREC, UPCAST_DOT)
            acc = acc * tl.exp2(b_cs_i)[:, None]
    for j in range(0, i_m + 1):
        offs_j = t_chunk + j * BLOCK_M + offs_m
        mask_j = offs_j < T
        b_x = tl.load(
            x_ptr + ((i_b * T + offs_j[:, None]) * H + i_h) * P + offs_p[None, :],
            mask=mask_j[:, None] & mask_p[None, :], other=0.0,
        )
        b_dt = tl.load(dt_ptr + (i_b * T + offs_j) * H + i_h, mask=mask_j, other=0.0)
        if PER_CHANNEL:
            keep = (j * BLOCK_M + offs_m[None, :] <= i_m * BLOCK_M + offs_m[:, None])
            keep = keep & mask_j[None, :]
            b_s = _pc_scores(
                b_C, b_gcs_i, mask_i, cs_ptr, B_ptr, x_ptr, i_b, i_h, i_g, j, i_m, t_chunk,
                offs_m, offs_n, mask_n, T, H, G, N, DOT_PREC, UPCAST_DOT, BLOCK_M, SUB_M,
                SPREAD_MAX,
            )
            b_s = tl.where(keep, b_s * b_dt.to(tl.float32)[None, :], 0.0)
        else:
            b_cs_j = tl.load(p_cs + offs_j, mask=mask_j, other=0.0)
            if HAS_CB:
                rows = i_m * BLOCK_M + offs_m
                cols = j * BLOCK_M + offs_m
                p_cb = cb_ptr + ((i_b * NCHUNKS + i_c) * G + i_g) * CHUNK * CHUNK
                b_s = tl.load(p_cb + rows[:, None] * CHUNK + cols[None, :],
                              mask=(rows < CHUNK)[:, None] & (cols < CHUNK)[None, :], other=0.0)
            else:
                b_B = tl.load(
                    B_ptr + ((i_b * T + offs_j[:, None]) * G + i_g) * N + offs_n[None, :],
                    mask=mask_j[:, None] & mask_n[None, :], other=0.0,
                )
                b_s = _dot(b_C, tl.trans(b_B), DOT_PREC, UPCAST_DOT)
            # Causal inside the diagonal block; the -inf exponent also keeps exp2 from overflowing.
            keep = (j * BLOCK_M + offs_m[None, :] <= i_m * BLOCK_M + offs_m[:, None])
            keep = keep & mask_j[None, :]
            seg = tl.where(keep, b_cs_i[:, None] - b_cs_j[None, :], float("-inf"))
            b_s = b_s * tl.exp2(seg) * b_dt.to(tl.float32)[None, :]
        acc += _dot(b_s.to(b_x.dtype), b_x, DOT_PREC, UPCAST_DOT)
    p_xi = ((i_b * T + offs_i[:, None]) * H + i_h) * P + offs_p[None, :]
    mask_ip = mask_i[:, None] & mask_p[None, :]
    if HAS_D:
        b_xi = tl.load(x_ptr + p_xi, mask=mask_ip, other=0.0).to(tl.float32)
        acc += tl.load(D_ptr + i_h).to(tl.float32) * b_xi
    tl.store(y_ptr + p_xi, acc.to(y_ptr.dtype.element_ty), mask=mask_ip)
