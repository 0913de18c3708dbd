"""The same recurrence in chunks: inside a chunk a cumulative sum of decay-scaled inputs
(parallel over t), across chunks the carried state; one Python step per chunk, not per token."""

from __future__ import annotations

import torch


def decay_scan_chunked(x: torch.Tensor, log_a: torch.Tensor, chunk: int = 64
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """x, log_a [B, T, D] (log_a <= 0, bounded over a chunk) -> (y [B, T, D], h_T [B, D]).

    Inside a chunk with G_t = sum_{j <= t} log_a_j: y_t = exp(G_t) (h_prev + sum_{j <= t}
    exp(-G_j) x_j)."""
    if x.dim() != 3 or log_a.shape != x.shape:
        raise ValueError(f"expected x, log_a [B, T, D], got {tuple(x.shape)}, {tuple(log_a.shape)}")
    h = torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype, device=x.device)
    y = torch.empty_like(x)
    for start in range(0, x.shape[1], chunk):
        g = log_a[:, start:start + chunk].cumsum(1)
        y[:, start:start + chunk] = g.exp() * (h[:, None] + ((-g).exp()
                                                             * x[:, start:start + chunk]).cumsum(1))
        h = y[:, start + g.shape[1] - 1]
    return y, h
