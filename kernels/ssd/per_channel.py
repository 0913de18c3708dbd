"""Chunked SSD with one decay per (head, state dimension): the GLA / HGRN2 form, for claim A5.

state_t[p, n] = exp(g_t[n]) state_{t-1}[p, n] + dt_t x_t[p] B_t[n];  y_t = state_t C_t + D x_t,
with log-decay g [B, T, H, N] (<= 0, natural log). The same kernels and launches as `chunked.py`
(`_launch.chunked_run`), switched by the PER_CHANNEL constexpr (three launches: chunk_state ->
state_passing -> chunk_scan, BLOCK_M row blocks, tensor-core dots), so that the two differ only in
what a per-channel decay forces:

- the decay no longer factors out of C_i . B_j, so each (row block, column block) pair rescales
  its C and B tiles elementwise ([BLOCK_M, N] exp2 each, against [BLOCK_M, BLOCK_M] for a scalar
  decay) before the tensor-core dot;
- the within-chunk cumulative decay is [T, N] per head instead of [T], and is stored in float32.
Both tiles are rescaled against the last row r of column block j: C_i exp(G_i - G_r) and
B_j exp(G_r - G_j). Off the diagonal both factors are <= 1; on the diagonal block the C factor
can exceed 1 by up to exp(-(decay over one block)). A diagonal block whose decay spread passes
2^100 (log-decay sum below about -69 per channel) is recomputed in 16-column slices, each against
its own last row (`_pc_scores`), so only a 16-step window that strong could still overflow.
"""

from __future__ import annotations

import torch

from ._launch import chunked_run


def ssd_chunked_per_channel(
    x: torch.Tensor,
    dt: torch.Tensor,
    log_decay: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    chunk_size: int = 64,
    *,
    block_m: int = 64,
    num_warps: int = 4,
    num_stages: int = 2,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-channel-decay chunked SSD. x [B, T, H, P]; dt [B, T, H] (input scale only);
    log_decay [B, T, H, N] (natural log, <= 0); Bm, Cm [B, T, G, N]; Dskip [H] fp32.
    Returns y [B, T, H, P] in x's dtype. With log_decay = dt*A broadcast over N this computes
    exactly `ssd_chunked`."""
    run = chunked_run(
        x, dt, None, Bm, Cm, Dskip, chunk_size, log_decay=log_decay,
        block_m=block_m, num_warps=num_warps, num_stages=num_stages, out=out,
    )
    return run()
