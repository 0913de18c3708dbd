"""MoE layer for decode-sized batches (T = 1..64 tokens), graph-capturable.

    y = moe_forward(x, expert_ids, expert_weights, w13, w2, shared_w13=, shared_w2=)

Four Triton launches (`_kernels` explains each): route (a counting sort of the T x K
(token, expert) pairs by expert, on the device), gate/up with SwiGLU fused (grouped over the
active experts), down (grouped), combine (the routing-weighted sum per token, plus the shared
experts). The grids are sized by the static bound E_SLOTS = min(E, T x K) of active experts;
a program reads its expert from the slot table the route kernel wrote and exits when its slot is
past the active count. No .item(), no host sync, every buffer's size fixed by the shapes: the
call can be captured in a CUDA graph and replayed with new routing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import triton

# the MLA decode wrappers' argument checks, the same for this decode kernel; a declaration that
# times this op lists mla/_args.py too (tests/unit/evidence/test_kernel_coverage.py checks)
from ..mla._args import FLOAT_DTYPES, INDEX_DTYPES, check, interpreting, kernel_device, sm_count
from ._kernels import (
    _moe_combine_kernel,
    _moe_down_kernel,
    _moe_gate_up_kernel,
    _moe_route_kernel,
)

# Shared memory the pipelined tiles may take: under the 227 KB a Hopper multiprocessor gives one
# program (the A100's 163 KB too), with room for the layout conversions Triton adds.
SMEM_BUDGET = 160 * 1024


@dataclass(frozen=True)
class MoEConfig:
    """Tile sizes of the grouped kernels; None picks them from the shapes (`pick_config`)."""

    block_m: int | None = None
    block_n_up: int | None = None
    block_n_down: int | None = None
    block_k: int = 128
    num_warps: int = 4
    num_stages: int = 4


def slot_bound(experts: int, tokens: int, top_k: int) -> int:
    """The static bound on distinct active experts: every expert, or every (token, choice)."""
    return min(experts, tokens * top_k)


def pick_config(tokens: int, top_k: int, experts: int, shared: int, d_model: int, ffn: int,
                device: torch.device, config: MoEConfig | None = None) -> MoEConfig:
    """Fill a config's open sizes. BLOCK_M covers about twice the mean rows per expert (T K / E),
    at least 16 (the smallest MMA tile) and at most 64; a slot with more rows loops over row
    blocks and reads its weights again. BLOCK_N is the widest (gate/up <= 64, as it loads a gate
    and an up tile; down <= 128) that still gives two programs per multiprocessor over the bound
    of active slots, so that a small T still spreads the weight stream over the whole GPU; the
    pipeline depth is cut so that the stages fit in SMEM_BUDGET."""
    cfg = config or MoEConfig()
    mean_rows = max(1, (2 * tokens * top_k + experts - 1) // experts)
    block_m = cfg.block_m or min(64, max(16, triton.next_power_of_2(min(tokens, mean_rows))))
    slots = slot_bound(experts, tokens, top_k) + shared
    want = 2 * sm_count(device)

    def widest(n: int, cap: int) -> int:
        block = cap
        while block > 16 and slots * triton.cdiv(n, block) < want:
            block //= 2
        return block

    block_n_up = cfg.block_n_up or widest(ffn, 64)
    block_n_down = cfg.block_n_down or widest(d_model, 128)
    # bf16 tiles of one pipeline stage: the gathered rows plus the weight rows (2 halves for up)
    stage = 2 * cfg.block_k * (block_m + max(2 * block_n_up, block_n_down))
    stages = max(2, min(cfg.num_stages, SMEM_BUDGET // stage))
    return MoEConfig(block_m=block_m, block_n_up=block_n_up, block_n_down=block_n_down,
                     block_k=cfg.block_k, num_warps=cfg.num_warps, num_stages=stages)


class Routing(NamedTuple):
    """The route kernel's tables (int32, on the device). slot_expert / slot_start / slot_count
    [E_SLOTS]: per active slot its expert, first row and row count (entries at and past
    num_active [1] are unwritten); pair_row [T K]: the row of each (token, choice), -1 when its
    id is outside [0, E); row_token [T K + S T]: the token of each row (rows of dropped pairs,
    at the end of the routed rows, unwritten)."""

    slot_expert: torch.Tensor
    slot_start: torch.Tensor
    slot_count: torch.Tensor
    num_active: torch.Tensor
    pair_row: torch.Tensor
    row_token: torch.Tensor


def route(expert_ids: torch.Tensor, experts: int, shared: int = 0) -> Routing:
    """Sort the (token, choice) pairs of expert_ids [T, K] by expert on the device (one launch;
    the caller has validated expert_ids)."""
    tokens, top_k = expert_ids.shape
    pairs = tokens * top_k
    e_slots = slot_bound(experts, tokens, top_k)
    i32 = {"device": expert_ids.device, "dtype": torch.int32}
    routing = Routing(torch.empty(e_slots, **i32), torch.empty(e_slots, **i32),
                      torch.empty(e_slots, **i32), torch.empty(1, **i32),
                      torch.empty(pairs, **i32), torch.empty(pairs + shared * tokens, **i32))
    block_p = min(64, max(16, triton.next_power_of_2(pairs)))
    _moe_route_kernel[(triton.cdiv(pairs, block_p),)](
        expert_ids, *routing, pairs, top_k, experts, tokens, shared,
        BLOCK_P=block_p, BLOCK_E=64, num_warps=4,
    )
    return routing


def moe_forward(
    x: torch.Tensor,
    expert_ids: torch.Tensor,
    expert_weights: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    *,
    shared_w13: torch.Tensor | None = None,
    shared_w2: torch.Tensor | None = None,
    config: MoEConfig | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """y [T, D] = sum_j w[t, j] FFN_{e[t, j]}(x[t]) + sum_s FFN_shared_s(x[t]).

    x: [T, D] (fp32/fp16/bf16); expert_ids: [T, K] int32/int64 (ids outside [0, E) are dropped:
    that choice adds nothing); expert_weights: [T, K], any float dtype; w13: [E, 2F, D], gate
    rows 0..F-1 and up rows F..2F-1 of each expert (nn.Linear layout, out x in); w2: [E, D, F];
    shared_w13: [S, 2F, D] and shared_w2: [S, D, F], both or neither. FFN(x) = W_down
    (silu(W_gate x) * W_up x). Weights in x's dtype. `out` ([T, D], x's dtype) receives y.
    """
    device = kernel_device(x, "x")
    if x.dim() != 2:
        raise ValueError(f"expected x of shape [T, D], got {tuple(x.shape)}")
    tokens, d_model = x.shape
    dtype = x.dtype
    check("x", x, [tokens, d_model], FLOAT_DTYPES, device)
    check("expert_ids", expert_ids, [tokens, None], INDEX_DTYPES, device)
    top_k = expert_ids.shape[1]
    check("expert_weights", expert_weights, [tokens, top_k], FLOAT_DTYPES, device)
    check("w13", w13, [None, None, d_model], (dtype,), device)
    experts, two_f = w13.shape[0], w13.shape[1]
    if two_f % 2:
        raise ValueError(f"expected w13 of shape [E, 2F, D] with an even 2F, got "
                         f"{tuple(w13.shape)}")
    ffn = two_f // 2
    check("w2", w2, [experts, d_model, ffn], (dtype,), device)
    if (shared_w13 is None) != (shared_w2 is None):
        raise ValueError("expected shared_w13 and shared_w2 both given or both None, got one")
    shared = 0
    if shared_w13 is not None:
        check("shared_w13", shared_w13, [None, two_f, d_model], (dtype,), device)
        shared = shared_w13.shape[0]
        check("shared_w2", shared_w2, [shared, d_model, ffn], (dtype,), device)
    if min(tokens, d_model, top_k, experts, ffn) < 1:
        raise ValueError(f"expected non-empty sizes, got T={tokens} D={d_model} K={top_k} "
                         f"E={experts} F={ffn}")
    if out is not None:
        check("out", out, [tokens, d_model], (dtype,), device)
    cfg = pick_config(tokens, top_k, experts, shared, d_model, ffn, device, config)

    routing = route(expert_ids, experts, shared)
    e_slots, pairs, rows = routing.slot_expert.shape[0], tokens * top_k, routing.row_token.shape[0]
    h = torch.empty(rows, ffn, device=device, dtype=dtype)
    out_rows = torch.empty(rows, d_model, device=device, dtype=torch.float32)
    y = torch.empty(tokens, d_model, device=device, dtype=dtype) if out is None else out
    slot_args = (routing.slot_expert, routing.slot_start, routing.slot_count, routing.num_active)
    ws13 = shared_w13 if shared_w13 is not None else w13
    ws2 = shared_w2 if shared_w2 is not None else w2
    upcast = interpreting() and dtype != torch.float32
    launch = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    _moe_gate_up_kernel[(triton.cdiv(ffn, cfg.block_n_up), e_slots + shared)](
        x, w13, ws13, *slot_args, routing.row_token, h,
        tokens, d_model, ffn, pairs, e_slots,
        x.stride(0), w13.stride(0), ws13.stride(0), w13.stride(1), h.stride(0),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n_up, BLOCK_K=cfg.block_k, UPCAST=upcast,
        **launch,
    )
    _moe_down_kernel[(triton.cdiv(d_model, cfg.block_n_down), e_slots + shared)](
        h, w2, ws2, *slot_args, out_rows,
        tokens, d_model, ffn, pairs, e_slots,
        h.stride(0), w2.stride(0), ws2.stride(0), w2.stride(1), out_rows.stride(0),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n_down, BLOCK_K=cfg.block_k, UPCAST=upcast,
        **launch,
    )
    block_d = min(1024, triton.next_power_of_2(d_model))
    _moe_combine_kernel[(tokens, triton.cdiv(d_model, block_d))](
        out_rows, routing.pair_row, expert_weights, y, tokens, d_model, pairs, top_k, shared,
        out_rows.stride(0), y.stride(0), BLOCK_D=block_d, num_warps=4,
    )
    return y
