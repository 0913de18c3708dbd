"""A scatter-add with many collisions, with and without torch's deterministic mode (claim D1).

Whether determinism "may be prohibitive" depends on the operation: a full sum costs a fixed-order
tree little, while a scatter-add (`index_add_` into few bins) is atomic-bound, and its
deterministic form (torch.use_deterministic_algorithms: a sort by index, then ordered adds) is a
different algorithm. torch is the implementation here (no bundled kernel); the global flag is
restored after each call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def deterministic_algorithms(on: bool) -> Iterator[None]:
    """torch.use_deterministic_algorithms(on) inside the block, the previous setting after."""
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(on)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def scatter_add(src: torch.Tensor, index: torch.Tensor, bins: int,
                deterministic: bool) -> torch.Tensor:
    """out [bins] fp32 = zeros.index_add_(0, index, src), in torch's (non)deterministic mode.
    src [n] fp32, index [n] int64 in [0, bins)."""
    with deterministic_algorithms(deterministic):
        out = torch.zeros(bins, dtype=torch.float32, device=src.device)
        out.index_add_(0, index, src)
    return out
