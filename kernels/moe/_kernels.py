"""Triton kernels of MoE decode: routing sort, grouped gate/up + SwiGLU, grouped down, combine.

Pairs: the P = T x K (token, expert) choices of the router, pair i = t x K + j. Rows: the pairs
sorted by expert (stable: token order within an expert), followed by S x T rows of the shared
experts (row P + s x T + t is token t through shared expert s). Slots: the distinct active
experts in increasing id order, at most E_SLOTS = min(E, P) of them (a static bound), then the S
shared experts at slots E_SLOTS .. E_SLOTS + S - 1.

`_moe_route_kernel`, grid (cdiv(P, BLOCK_P),): a counting sort on the device. Program 0 counts
the pairs of every expert and writes, per active slot, its expert id, first row and row count,
and the number of active slots. Every program places its block of pairs: the row of pair i is
the number of valid pairs j with (e_j, j) < (e_i, i). Ids outside [0, E) are dropped (row -1):
no weight is read for them, whatever the router wrote.

`_moe_gate_up_kernel` and `_moe_down_kernel`, grid (N tiles, E_SLOTS + S): program (n, slot)
looks its expert up in the slot table (a slot past the active count exits at once), gathers its
rows' inputs and multiplies them by the expert's weight tile. Only active experts' weights are
read, each tile once (one row block covers every row of the slot unless the slot has more rows
than BLOCK_M). Gate/up computes both halves of one N tile and writes silu(gate) x up.

`_moe_combine_kernel`, grid (T, D tiles): y[t] = sum_j w[t, j] out[row(t, j)] + sum_s
out[P + s T + t], in a fixed order (deterministic; no atomics).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _dot(a, b, acc, UPCAST: tl.constexpr):
    """acc + a @ b. UPCAST (set under the CPU interpreter for 16-bit inputs): Triton 3.9's
    interpreter reads bf16 dot operands as raw bits; fp32 holds every bf16/fp16 value exactly, so
    an IEEE fp32 dot gives the products and fp32 sums the tensor-core dot gives."""
    if UPCAST:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    return tl.dot(a, b, acc)


@triton.jit
def _valid_ids(p_ids, offs, P, E):
    """Expert ids of pairs `offs` as int32, -1 for a pair past P or an id outside [0, E) (compared
    before the narrowing, so a huge int64 id cannot wrap into range)."""
    ids = tl.load(p_ids + offs, mask=offs < P, other=-1)
    return tl.where((offs < P) & (ids >= 0) & (ids < E), ids, -1).to(tl.int32)


@triton.jit
def _moe_route_kernel(
    p_ids, p_slot_expert, p_slot_start, p_slot_count, p_num_active, p_pair_row, p_row_token,
    P, K, E, T, S,
    BLOCK_P: tl.constexpr, BLOCK_E: tl.constexpr,
):
    pid = tl.program_id(0)
    if pid == 0:
        # the shared experts' rows: row P + s T + t is token t
        for r0 in range(0, S * T, BLOCK_P):
            offs_r = r0 + tl.arange(0, BLOCK_P)
            tl.store(p_row_token + P + offs_r, offs_r % T, mask=offs_r < S * T)
        n_slots = tl.sum(tl.zeros([BLOCK_E], dtype=tl.int32), 0)
        n_rows = tl.sum(tl.zeros([BLOCK_E], dtype=tl.int32), 0)
        for e0 in range(0, E, BLOCK_E):
            offs_e = e0 + tl.arange(0, BLOCK_E)
            count = tl.zeros([BLOCK_E], dtype=tl.int32)
            for j0 in range(0, P, BLOCK_P):
                offs_j = j0 + tl.arange(0, BLOCK_P)
                ids_j = _valid_ids(p_ids, offs_j, P, E)
                hit = ids_j[:, None] == offs_e[None, :]
                count += tl.sum(hit.to(tl.int32), 0)
            count = tl.where(offs_e < E, count, 0)
            active = (count > 0) & (offs_e < E)
            slot = n_slots + tl.cumsum(active.to(tl.int32), 0) - 1
            start = n_rows + tl.cumsum(count, 0) - count
            tl.store(p_slot_expert + slot, offs_e, mask=active)
            tl.store(p_slot_start + slot, start, mask=active)
            tl.store(p_slot_count + slot, count, mask=active)
            n_slots += tl.sum(active.to(tl.int32), 0)
            n_rows += tl.sum(count, 0)
        tl.store(p_num_active, n_slots)

    offs_i = pid * BLOCK_P + tl.arange(0, BLOCK_P)
    ids_i = _valid_ids(p_ids, offs_i, P, E)
    valid_i = ids_i >= 0
    row = tl.zeros([BLOCK_P], dtype=tl.int32)
    for j0 in range(0, P, BLOCK_P):
        offs_j = j0 + tl.arange(0, BLOCK_P)
        ids_j = _valid_ids(p_ids, offs_j, P, E)
        valid_j = ids_j >= 0
        before = (ids_j[None, :] < ids_i[:, None]) | (
            (ids_j[None, :] == ids_i[:, None]) & (offs_j[None, :] < offs_i[:, None]))
        row += tl.sum((before & valid_j[None, :]).to(tl.int32), 1)
    tl.store(p_pair_row + offs_i, tl.where(valid_i, row, -1), mask=offs_i < P)
    tl.store(p_row_token + row, offs_i // K, mask=valid_i)


@triton.jit
def _slot_lookup(slot, p_slot_expert, p_slot_start, p_slot_count, p_w, p_ws, s_w_e, s_ws_e,
                 E_SLOTS, P, T):
    """(weight base, first row, row count) of a slot: an active routed expert below E_SLOTS, a
    shared expert at E_SLOTS + s."""
    if slot < E_SLOTS:
        e = tl.load(p_slot_expert + slot).to(tl.int64)
        base = p_w + e * s_w_e
        start = tl.load(p_slot_start + slot)
        count = tl.load(p_slot_count + slot)
    else:
        shared = (slot - E_SLOTS).to(tl.int64)
        base = p_ws + shared * s_ws_e
        start = (P + shared * T).to(tl.int32)
        count = T
    return base, start, count


@triton.jit(do_not_specialize=["T", "P", "E_SLOTS"])
def _moe_gate_up_kernel(
    p_x, p_w13, p_ws13, p_slot_expert, p_slot_start, p_slot_count, p_num_active, p_row_token,
    p_h,
    T, D, F, P, E_SLOTS,
    s_x_t, s_w_e, s_ws_e, s_w_n, s_h_r,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, UPCAST: tl.constexpr,
):
    pid_n = tl.program_id(0)
    slot = tl.program_id(1)
    # a routed slot past the active count has no expert: exit before touching any weight
    if (slot < E_SLOTS) & (slot >= tl.load(p_num_active)):
        return
    base, start, count = _slot_lookup(slot, p_slot_expert, p_slot_start, p_slot_count, p_w13,
                                      p_ws13, s_w_e, s_ws_e, E_SLOTS, P, T)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < F
    offs_mb = tl.arange(0, BLOCK_M)
    offs_kb = tl.arange(0, BLOCK_K)
    p_gate = base + offs_n.to(tl.int64)[:, None] * s_w_n
    p_up = base + (F + offs_n).to(tl.int64)[:, None] * s_w_n
    for m0 in range(0, count, BLOCK_M):
        mask_m = m0 + offs_mb < count
        rows = (start + m0 + offs_mb).to(tl.int64)
        tok = tl.load(p_row_token + rows, mask=mask_m, other=0).to(tl.int64)
        acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k0 in range(0, D, BLOCK_K):
            offs_k = k0 + offs_kb
            mask_k = offs_k < D
            b_x = tl.load(p_x + tok[:, None] * s_x_t + offs_k[None, :],
                          mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            w_mask = mask_n[:, None] & mask_k[None, :]
            b_g = tl.load(p_gate + offs_k[None, :], mask=w_mask, other=0.0)
            b_u = tl.load(p_up + offs_k[None, :], mask=w_mask, other=0.0)
            acc_g = _dot(b_x, tl.trans(b_g), acc_g, UPCAST)
            acc_u = _dot(b_x, tl.trans(b_u), acc_u, UPCAST)
        # SwiGLU in fp32 before the one rounding to the activation dtype
        b_h = acc_g / (1.0 + tl.exp(-acc_g)) * acc_u
        tl.store(p_h + rows[:, None] * s_h_r + offs_n[None, :], b_h.to(p_h.dtype.element_ty),
                 mask=mask_m[:, None] & mask_n[None, :])


@triton.jit(do_not_specialize=["T", "P", "E_SLOTS"])
def _moe_down_kernel(
    p_h, p_w2, p_ws2, p_slot_expert, p_slot_start, p_slot_count, p_num_active, p_out,
    T, D, F, P, E_SLOTS,
    s_h_r, s_w_e, s_ws_e, s_w_n, s_out_r,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, UPCAST: tl.constexpr,
):
    pid_n = tl.program_id(0)
    slot = tl.program_id(1)
    # a routed slot past the active count has no expert: exit before touching any weight
    if (slot < E_SLOTS) & (slot >= tl.load(p_num_active)):
        return
    base, start, count = _slot_lookup(slot, p_slot_expert, p_slot_start, p_slot_count, p_w2,
                                      p_ws2, s_w_e, s_ws_e, E_SLOTS, P, T)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < D
    offs_mb = tl.arange(0, BLOCK_M)
    offs_kb = tl.arange(0, BLOCK_K)
    p_w = base + offs_n.to(tl.int64)[:, None] * s_w_n
    for m0 in range(0, count, BLOCK_M):
        mask_m = m0 + offs_mb < count
        rows = (start + m0 + offs_mb).to(tl.int64)
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k0 in range(0, F, BLOCK_K):
            offs_k = k0 + offs_kb
            mask_k = offs_k < F
            b_h = tl.load(p_h + rows[:, None] * s_h_r + offs_k[None, :],
                          mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            b_w = tl.load(p_w + offs_k[None, :], mask=mask_n[:, None] & mask_k[None, :],
                          other=0.0)
            acc = _dot(b_h, tl.trans(b_w), acc, UPCAST)
        tl.store(p_out + rows[:, None] * s_out_r + offs_n[None, :], acc,
                 mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def _moe_combine_kernel(
    p_out, p_pair_row, p_weights, p_y,
    T, D, P, K, S,
    s_out_r, s_y_t,
    BLOCK_D: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    offs_d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask_d = offs_d < D
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for j in range(0, K):
        row = tl.load(p_pair_row + t * K + j).to(tl.int64)
        w = tl.load(p_weights + t * K + j).to(tl.float32)
        # a dropped choice (row -1) reads row 0 and adds nothing: where, not a product, so that
        # whatever row 0 holds (it may be unwritten) cannot leak in as NaN x 0
        b_o = tl.load(p_out + tl.maximum(row, 0) * s_out_r + offs_d, mask=mask_d, other=0.0)
        acc += tl.where(row >= 0, w * b_o, 0.0)
    for s in range(0, S):
        acc += tl.load(p_out + (P + s * T + t) * s_out_r + offs_d, mask=mask_d, other=0.0)
    tl.store(p_y + t * s_y_t + offs_d, acc.to(p_y.dtype.element_ty), mask=mask_d)
