"""Triton kernels of the chunked SSD backward (the forward's stages in `_chunk_kernels.py`).

Per head h of group g, chunk c with start state h_c, local cumsum cs (log2 units in memory,
natural units in the formulas), M_ij = CB_ij exp(cs_i - cs_j) for j <= i in the chunk:

    y_i = exp(cs_i) C_i h_c^T + sum_{j<=i} M_ij dt_j x_j + D x_i

Given dy, with g_{c+1} = dL/dS_c the gradient of chunk c's end state (from the reverse state
passing, `_state_passing_kernel` with REVERSE):

- dx_j   = dt_j dxr_j + D dy_j,  dxr_j = sum_{i>=j} M_ij dy_i + exp(cs_last - cs_j) g_{c+1} B_j
- dCB_ij = sum_{h in g} (dy_i . x_j) exp(cs_i - cs_j) dt_j            (per group, [Q, Q])
- dC_i   = sum_{j<=i} dCB_ij B_j + sum_{h in g} exp(cs_i) h_c^T dy_i
- dB_j   = sum_{i>=j} dCB_ij C_i + sum_{h in g} dt_j exp(cs_last - cs_j) g_{c+1}^T x_j
- dcs_t  = R_t - dt_t x_t . dxr_t + [t = last] (exp(cs_last) <g_{c+1}, h_c> + sum_s V_s), where
  R_i    = dy_i . (y_i - D x_i) = exp(cs_i) dy_i . (h_c C_i) + sum_{j<=i} W_ij,
  W_ij   = (dy_i . x_j) CB_ij exp(cs_i - cs_j) dt_j,  V_s = dt_s x_s . (end-state part of dxr_s),
  sum_s V_s = <g_{c+1}, S_c>. In the reverse cumsum below the pairs (i, j) inside [t, end] cancel,
  and the V terms are summed directly as sum_{s<t} V_s, so no term of the end-state gradient is
  added at the chunk's end only to be taken off again (that cancellation cost bf16 dA digits):
- da_t   = sum_{s>=t} (R_s - dt_s x_s . dxr_s + V_s) + exp(cs_last) <g_{c+1}, h_c> + sum_{s<t} V_s
  (a_t = dt_t A, cs = cumsum a, sums within the chunk);
  ddt_t  = x_t . dxr_t + A da_t;  dA = sum_t dt_t da_t;  dD = sum dy . x.

Kernels (launch order): `_bwd_dx_kernel` (dx, x . dxr, dD partials; per head),
`_bwd_dcb_kernel` (dCB, R, the state part of dC; per group, heads looped, optionally split over
programs), `_bwd_dbc_kernel` (dB and dC from dCB; per group), `_bwd_ddt_kernel` (the reverse
cumsum: ddt and dA partials). The state terms run in `_chunk_state_kernel` / `_state_passing_kernel`
with REVERSE. Every dot runs on tensor cores in the dtype of dy (x's dtype).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._chunk_kernels import _dot


@triton.jit
def _bwd_dx_kernel(
    x_ptr, dt_ptr, B_ptr, D_ptr, cs_ptr, ds_ptr, cb_ptr, dy_ptr,
    dx_ptr, dxr_ptr, xv_ptr, dd_ptr, rpart_ptr,
    T, H, P, N, HEADS_PER_GROUP, CHUNK, NCHUNKS, ROW_BLOCKS,
    HAS_D: tl.constexpr, DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    R_IN_DX: tl.constexpr = False,
):
    """Per (batch, head) x (chunk, block of source rows j): dx_j, x_j . dxr_j and the end-state
    part of the latter alone. With R_IN_DX also this block's share of the intra-chunk R_i of
    every later row i (rpart [B, H, T, ROW_BLOCKS], column j-block), at one more dot per tile."""
    # Heads vary fastest across programs: neighbours share B rows and CB tiles in L2.
    pid_bh = tl.program_id(0)
    pid1 = tl.program_id(1)
    i_c = pid1 // ROW_BLOCKS
    i_m = pid1 % ROW_BLOCKS
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
    cols = i_m * BLOCK_M + offs_m
    offs_j = t_chunk + cols
    mask_j = (cols < CHUNK) & (offs_j < T)
    p_cs = cs_ptr + pid_bh.to(tl.int64) * T
    b_cs_j = tl.load(p_cs + offs_j, mask=mask_j, other=0.0)
    b_cs_last = tl.load(p_cs + tl.minimum(t_chunk + CHUNK, T) - 1)
    b_B = tl.load(
        B_ptr + ((i_b * T + offs_j[:, None]) * G + i_g) * N + offs_n[None, :],
        mask=mask_j[:, None] & mask_n[None, :], other=0.0,
    )
    p_ds = (
        ds_ptr + ((i_b * NCHUNKS + i_c) * H + i_h) * P * N
        + offs_p[:, None] * N + offs_n[None, :]
    )
    b_ds = tl.load(p_ds, mask=mask_p[:, None] & mask_n[None, :], other=0.0)
    DT = dy_ptr.dtype.element_ty
    # The end state's gradient reaches row j through exp(cs_last - cs_j) <= 1.
    acc = _dot(b_B.to(DT), tl.trans(b_ds.to(DT)), DOT_PREC, UPCAST_DOT)
    acc = acc * tl.exp2(b_cs_last - b_cs_j)[:, None]
    p_xj = ((i_b * T + offs_j[:, None]) * H + i_h) * P + offs_p[None, :]
    mask_jp = mask_j[:, None] & mask_p[None, :]
    b_xin = tl.load(x_ptr + p_xj, mask=mask_jp, other=0.0)
    b_x = b_xin.to(tl.float32)
    tl.store(xv_ptr + pid_bh.to(tl.int64) * T + offs_j, tl.sum(acc * b_x, axis=1), mask=mask_j)
    b_dt = tl.load(dt_ptr + (i_b * T + offs_j) * H + i_h, mask=mask_j, other=0.0).to(tl.float32)
    p_cb = cb_ptr + ((i_b * NCHUNKS + i_c) * G + i_g) * CHUNK * CHUNK
    n_rows = tl.minimum(CHUNK, T - t_chunk)
    for i in range(i_m, tl.cdiv(n_rows, BLOCK_M)):
        rows = i * BLOCK_M + offs_m
        offs_i = t_chunk + rows
        mask_i = (rows < CHUNK) & (offs_i < T)
        b_cs_i = tl.load(p_cs + offs_i, mask=mask_i, other=0.0)
        b_dy = tl.load(
            dy_ptr + ((i_b * T + offs_i[:, None]) * H + i_h) * P + offs_p[None, :],
            mask=mask_i[:, None] & mask_p[None, :], other=0.0,
        )
        b_cb = tl.load(p_cb + rows[:, None] * CHUNK + cols[None, :],
                       mask=mask_i[:, None] & mask_j[None, :], other=0.0)
        keep = (cols[None, :] <= rows[:, None]) & mask_i[:, None] & mask_j[None, :]
        seg = tl.where(keep, b_cs_i[:, None] - b_cs_j[None, :], float("-inf"))
        b_m = tl.where(keep, b_cb * tl.exp2(seg), 0.0).to(DT)
        acc += _dot(tl.trans(b_m), b_dy, DOT_PREC, UPCAST_DOT)
        if R_IN_DX:
            # W_ij = (dy_i . x_j) M_ij dt_j with M rounded exactly as in the dot above.
            b_dyx = _dot(b_dy, tl.trans(b_xin.to(DT)), DOT_PREC, UPCAST_DOT)
            b_w = tl.sum(b_dyx * b_m.to(tl.float32) * b_dt[None, :], axis=1)
            tl.store(rpart_ptr + (pid_bh.to(tl.int64) * T + offs_i) * ROW_BLOCKS + i_m, b_w,
                     mask=mask_i)
    b_dx = acc * b_dt[:, None]
    if HAS_D:
        b_dyj = tl.load(dy_ptr + p_xj, mask=mask_jp, other=0.0).to(tl.float32)
        b_dx += tl.load(D_ptr + i_h).to(tl.float32) * b_dyj
        tl.store(dd_ptr + pid_bh.to(tl.int64) * tl.num_programs(1) + pid1, tl.sum(b_dyj * b_x))
    tl.store(dx_ptr + p_xj, b_dx.to(dx_ptr.dtype.element_ty), mask=mask_jp)
    tl.store(dxr_ptr + pid_bh.to(tl.int64) * T + offs_j, tl.sum(acc * b_x, axis=1), mask=mask_j)


@triton.jit
def _bwd_dcb_kernel(
    x_ptr, dt_ptr, C_ptr, cs_ptr, hin_ptr, cb_ptr, dy_ptr,
    dcb_ptr, dcp_ptr, r_ptr,
    T, H, P, N, HEADS_PER_GROUP, CHUNK, NCHUNKS, ROW_BLOCKS, NSPLIT, HEADS_PER_PROG,
    DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr,
    R_IN_DX: tl.constexpr = False,
):
    """Per (batch, group, head split) x (chunk, block of target rows i), over the split's heads:
    the state part of dC_i (partial per split), R_i per head, and dCB_ij for j <= i (partial per
    split). The head loop is the K loop of a GEMM: one accumulator, heads streamed through it.

    With R_IN_DX the dx kernel supplies R's intra-chunk part, so off the diagonal the decay
    factors into the operands, exp(cs_i - cs_j) = exp(cs_i - cs_r) exp(cs_r - cs_j) with r the
    column block's last row (both <= 1): dy_i and dt_j x_j are scaled by [BLOCK_M] vectors and
    the tile is a plain accumulated dot, with no [BLOCK_M, BLOCK_M] elementwise work per head."""
    pid0 = tl.program_id(0)
    pid1 = tl.program_id(1)
    i_c = pid1 // ROW_BLOCKS
    i_m = pid1 % ROW_BLOCKS
    G = H // HEADS_PER_GROUP
    i_b = (pid0 // (G * NSPLIT)).to(tl.int64)
    i_g = (pid0 // NSPLIT) % G
    i_s = pid0 % NSPLIT
    h0 = i_g * HEADS_PER_GROUP + i_s * HEADS_PER_PROG
    offs_m = tl.arange(0, BLOCK_M)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    offs_hh = tl.arange(0, BLOCK_H)
    mask_p = offs_p < P
    mask_n = offs_n < N
    t_chunk = i_c * CHUNK
    rows = i_m * BLOCK_M + offs_m
    offs_i = t_chunk + rows
    mask_i = (rows < CHUNK) & (offs_i < T)
    mask_ip = mask_i[:, None] & mask_p[None, :]
    b_C = tl.load(
        C_ptr + ((i_b * T + offs_i[:, None]) * G + i_g) * N + offs_n[None, :],
        mask=mask_i[:, None] & mask_n[None, :], other=0.0,
    ).to(tl.float32)
    DT = dy_ptr.dtype.element_ty
    b_r = tl.zeros([BLOCK_H, BLOCK_M], dtype=tl.float32)
    b_dc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for hh in range(HEADS_PER_PROG):
        i_h = h0 + hh
        b_cs_i = tl.load(cs_ptr + (i_b * H + i_h) * T + offs_i, mask=mask_i, other=0.0)
        b_dy = tl.load(dy_ptr + ((i_b * T + offs_i[:, None]) * H + i_h) * P + offs_p[None, :],
                       mask=mask_ip, other=0.0)
        p_h = (
            hin_ptr + ((i_b * NCHUNKS + i_c) * H + i_h) * P * N
            + offs_p[:, None] * N + offs_n[None, :]
        )
        b_hin = tl.load(p_h, mask=mask_p[:, None] & mask_n[None, :], other=0.0)
        b_t = _dot(b_dy, b_hin.to(DT), DOT_PREC, UPCAST_DOT) * tl.exp2(b_cs_i)[:, None]
        b_dc += b_t
        b_r += tl.where(offs_hh[:, None] == hh, tl.sum(b_t * b_C, axis=1)[None, :], 0.0)
    p_dcp = dcp_ptr + (((i_b * T + offs_i[:, None]) * NSPLIT + i_s) * G + i_g) * N
    tl.store(p_dcp + offs_n[None, :], b_dc, mask=mask_i[:, None] & mask_n[None, :])
    p_cb = cb_ptr + ((i_b * NCHUNKS + i_c) * G + i_g) * CHUNK * CHUNK
    p_dcb = dcb_ptr + (((i_b * NCHUNKS + i_c) * NSPLIT + i_s) * G + i_g) * CHUNK * CHUNK
    for j in range(0, i_m + 1):
        cols = j * BLOCK_M + offs_m
        offs_j = t_chunk + cols
        mask_j = offs_j < T
        keep = (cols[None, :] <= rows[:, None]) & mask_i[:, None] & mask_j[None, :]
        if not R_IN_DX:
            b_cb = tl.load(p_cb + rows[:, None] * CHUNK + cols[None, :], mask=keep, other=0.0)
        t_r = tl.minimum(t_chunk + (j + 1) * BLOCK_M, T) - 1
        b_tile = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
        for hh in range(HEADS_PER_PROG):
            i_h = h0 + hh
            p_cs = cs_ptr + (i_b * H + i_h) * T
            b_cs_i = tl.load(p_cs + offs_i, mask=mask_i, other=0.0)
            b_cs_j = tl.load(p_cs + offs_j, mask=mask_j, other=0.0)
            b_dt = tl.load(dt_ptr + (i_b * T + offs_j) * H + i_h, mask=mask_j, other=0.0)
            b_dy = tl.load(
                dy_ptr + ((i_b * T + offs_i[:, None]) * H + i_h) * P + offs_p[None, :],
                mask=mask_ip, other=0.0,
            )
            b_x = tl.load(
                x_ptr + ((i_b * T + offs_j[:, None]) * H + i_h) * P + offs_p[None, :],
                mask=mask_j[:, None] & mask_p[None, :], other=0.0,
            )
            if R_IN_DX:
                if j < i_m:
                    b_cs_r = tl.load(p_cs + t_r)
                    b_u = tl.exp2(tl.where(mask_i, b_cs_i - b_cs_r, float("-inf")))
                    b_v = tl.exp2(b_cs_r - b_cs_j) * b_dt.to(tl.float32)
                    b_a = (b_dy.to(tl.float32) * b_u[:, None]).to(DT)
                    b_b = (b_x.to(tl.float32) * b_v[:, None]).to(DT)
                    b_tile += _dot(b_a, tl.trans(b_b), DOT_PREC, UPCAST_DOT)
                else:
                    b_dyx = _dot(b_dy, tl.trans(b_x.to(DT)), DOT_PREC, UPCAST_DOT)
                    seg = tl.where(keep, b_cs_i[:, None] - b_cs_j[None, :], float("-inf"))
                    b_tile += b_dyx * tl.exp2(seg) * b_dt.to(tl.float32)[None, :]
            else:
                b_dyx = _dot(b_dy, tl.trans(b_x.to(DT)), DOT_PREC, UPCAST_DOT)
                seg = tl.where(keep, b_cs_i[:, None] - b_cs_j[None, :], float("-inf"))
                b_e = tl.exp2(seg)
                b_dtj = b_dt.to(tl.float32)[None, :]
                b_tile += b_dyx * b_e * b_dtj
                # R takes M_ij rounded exactly as `_bwd_dx_kernel` rounds it for its dot: the
                # pairs that cancel in da then cancel to fp32 rounding, not the dot dtype's.
                b_m = (b_cb * b_e).to(DT).to(tl.float32)
                b_w = tl.sum(b_dyx * b_m * b_dtj, axis=1)
                b_r += tl.where(offs_hh[:, None] == hh, b_w[None, :], 0.0)
        tl.store(p_dcb + rows[:, None] * CHUNK + cols[None, :],
                 b_tile.to(dcb_ptr.dtype.element_ty),
                 mask=(rows < CHUNK)[:, None] & (cols < CHUNK)[None, :])
    p_r = r_ptr + (i_b * H + h0 + offs_hh[:, None]) * T + offs_i[None, :]
    tl.store(p_r, b_r, mask=(offs_hh < HEADS_PER_PROG)[:, None] & mask_i[None, :])


@triton.jit
def _bwd_dbc_kernel(
    x_ptr, dt_ptr, B_ptr, C_ptr, cs_ptr, ds_ptr, dcb_ptr, dcp_ptr,
    dB_ptr, dC_ptr,
    T, H, P, N, HEADS_PER_GROUP, CHUNK, NCHUNKS, ROW_BLOCKS, NSPLIT,
    DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """Per (batch, group) x (chunk, block of rows r): dC_r and dB_r (dCB's split partials and the
    state part of dC summed here)."""
    pid0 = tl.program_id(0)
    pid1 = tl.program_id(1)
    i_c = pid1 // ROW_BLOCKS
    i_m = pid1 % ROW_BLOCKS
    G = H // HEADS_PER_GROUP
    i_b = (pid0 // G).to(tl.int64)
    i_g = pid0 % G
    offs_m = tl.arange(0, BLOCK_M)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    mask_p = offs_p < P
    mask_n = offs_n < N
    t_chunk = i_c * CHUNK
    rows = i_m * BLOCK_M + offs_m
    offs_r = t_chunk + rows
    mask_r = (rows < CHUNK) & (offs_r < T)
    mask_rn = mask_r[:, None] & mask_n[None, :]
    DT = x_ptr.dtype.element_ty
    p_dcb = dcb_ptr + ((i_b * NCHUNKS + i_c) * NSPLIT * G + i_g) * CHUNK * CHUNK
    split_stride = G * CHUNK * CHUNK
    p_dcp = dcp_ptr + ((i_b * T + offs_r[:, None]) * NSPLIT * G + i_g) * N + offs_n[None, :]
    b_dc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for s in range(NSPLIT):
        b_dc += tl.load(p_dcp + s * G * N, mask=mask_rn, other=0.0)
    for j in range(0, i_m + 1):
        cols = j * BLOCK_M + offs_m
        offs_j = t_chunk + cols
        mask_j = offs_j < T
        b_tile = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
        for s in range(NSPLIT):
            b_tile += tl.load(p_dcb + s * split_stride + rows[:, None] * CHUNK + cols[None, :],
                              mask=mask_r[:, None] & mask_j[None, :], other=0.0).to(tl.float32)
        b_Bj = tl.load(B_ptr + ((i_b * T + offs_j[:, None]) * G + i_g) * N + offs_n[None, :],
                       mask=mask_j[:, None] & mask_n[None, :], other=0.0)
        b_dc += _dot(b_tile.to(DT), b_Bj.to(DT), DOT_PREC, UPCAST_DOT)
    p_out = ((i_b * T + offs_r[:, None]) * G + i_g) * N + offs_n[None, :]
    tl.store(dC_ptr + p_out, b_dc.to(dC_ptr.dtype.element_ty), mask=mask_rn)
    b_db = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    n_rows = tl.minimum(CHUNK, T - t_chunk)
    for i in range(i_m, tl.cdiv(n_rows, BLOCK_M)):
        r_i = i * BLOCK_M + offs_m
        offs_i = t_chunk + r_i
        mask_i = offs_i < T
        b_tile = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
        for s in range(NSPLIT):
            b_tile += tl.load(p_dcb + s * split_stride + r_i[:, None] * CHUNK + rows[None, :],
                              mask=mask_i[:, None] & mask_r[None, :], other=0.0).to(tl.float32)
        b_Ci = tl.load(C_ptr + ((i_b * T + offs_i[:, None]) * G + i_g) * N + offs_n[None, :],
                       mask=mask_i[:, None] & mask_n[None, :], other=0.0)
        b_db += _dot(tl.trans(b_tile.to(DT)), b_Ci.to(DT), DOT_PREC, UPCAST_DOT)
    t_last = tl.minimum(t_chunk + CHUNK, T) - 1
    for hh in range(HEADS_PER_GROUP):
        i_h = i_g * HEADS_PER_GROUP + hh
        p_cs = cs_ptr + (i_b * H + i_h) * T
        b_cs = tl.load(p_cs + offs_r, mask=mask_r, other=0.0)
        b_cs_last = tl.load(p_cs + t_last)
        b_dt = tl.load(dt_ptr + (i_b * T + offs_r) * H + i_h, mask=mask_r, other=0.0)
        b_w = b_dt.to(tl.float32) * tl.exp2(b_cs_last - b_cs)
        b_x = tl.load(x_ptr + ((i_b * T + offs_r[:, None]) * H + i_h) * P + offs_p[None, :],
                      mask=mask_r[:, None] & mask_p[None, :], other=0.0)
        b_xw = (b_x.to(tl.float32) * b_w[:, None]).to(DT)
        p_ds = (
            ds_ptr + ((i_b * NCHUNKS + i_c) * H + i_h) * P * N
            + offs_p[:, None] * N + offs_n[None, :]
        )
        b_ds = tl.load(p_ds, mask=mask_p[:, None] & mask_n[None, :], other=0.0)
        b_db += _dot(b_xw, b_ds.to(DT), DOT_PREC, UPCAST_DOT)
    tl.store(dB_ptr + p_out, b_db.to(dB_ptr.dtype.element_ty), mask=mask_rn)


@triton.jit
def _bwd_ddt_kernel(
    dt_ptr, A_ptr, dxr_ptr, xv_ptr, r_ptr, lpart_ptr, rpart_ptr, ddt_ptr, da_ptr,
    T, H, CHUNK, NCHUNKS, NLPART, ROW_BLOCKS, ROWS_PER_BLOCK,
    BLOCK_Q: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_RB: tl.constexpr,
    R_IN_DX: tl.constexpr = False,
):
    """Per (batch, head) x chunk: dcs, its reverse cumsum da, ddt and the chunk's share of dA."""
    pid_bh = tl.program_id(0)
    i_c = tl.program_id(1)
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    offs = tl.arange(0, BLOCK_Q)
    offs_t = i_c * CHUNK + offs
    mask = (offs < CHUNK) & (offs_t < T)
    base = pid_bh.to(tl.int64) * T
    b_r = tl.load(r_ptr + base + offs_t, mask=mask, other=0.0)
    if R_IN_DX:
        # Row t's shares from the column blocks j <= its own block (the others are not written).
        offs_rb = tl.arange(0, BLOCK_RB)
        m_rb = mask[:, None] & (offs_rb[None, :] <= (offs // ROWS_PER_BLOCK)[:, None])
        p_rp = rpart_ptr + (base + offs_t[:, None]) * ROW_BLOCKS + offs_rb[None, :]
        b_r += tl.sum(tl.load(p_rp, mask=m_rb, other=0.0), axis=1)
    b_xdx = tl.load(dxr_ptr + base + offs_t, mask=mask, other=0.0)
    b_dt = tl.load(dt_ptr + (i_b * T + offs_t) * H + i_h, mask=mask, other=0.0).to(tl.float32)
    offs_l = tl.arange(0, BLOCK_L)
    b_l = tl.sum(tl.load(lpart_ptr + (pid_bh.to(tl.int64) * NCHUNKS + i_c) * NLPART + offs_l,
                         mask=offs_l < NLPART, other=0.0), axis=0)
    b_v = b_dt * tl.load(xv_ptr + base + offs_t, mask=mask, other=0.0)
    last = tl.minimum(CHUNK, T - i_c * CHUNK) - 1
    b_dcs = b_r - b_dt * b_xdx + b_v + tl.where(offs == last, b_l, 0.0)
    b_da = tl.cumsum(b_dcs, axis=0, reverse=True) + (tl.cumsum(b_v, axis=0) - b_v)
    b_a = tl.load(A_ptr + i_h).to(tl.float32)
    tl.store(ddt_ptr + (i_b * T + offs_t) * H + i_h,
             (b_xdx + b_a * b_da).to(ddt_ptr.dtype.element_ty), mask=mask)
    tl.store(da_ptr + pid_bh.to(tl.int64) * NCHUNKS + i_c, tl.sum(tl.where(mask, b_dt * b_da, 0.0)))
