"""flash-linear-attention (fla-core): its simple GLA and GLA kernels are SSD's math.

SSD with one decay per head is simple GLA with q = C, k = B, v = x * dt, g = dt * A (log decay
per step and head); per-channel decay (GLA, HGRN2) is `chunk_gla` with g per state channel.
Kimi Linear's KDA layers (the serving experiments) run fla's `fla.ops.kda`.
"""

from __future__ import annotations

from typing import Any

from flopkb.verify.errors import PeerUnavailable
from flopkb.verify.peers import version


def ops() -> tuple[dict[str, Any], str]:
    """{'chunk_simple_gla', 'fused_recurrent_simple_gla', 'chunk_gla'} and 'fla-core <version>'."""
    try:
        from fla.ops.gla import chunk_gla
        from fla.ops.simple_gla import chunk_simple_gla, fused_recurrent_simple_gla
    except Exception as exc:
        raise PeerUnavailable(f"fla not importable ({type(exc).__name__}: {exc})") from exc
    return ({"chunk_simple_gla": chunk_simple_gla,
             "fused_recurrent_simple_gla": fused_recurrent_simple_gla,
             "chunk_gla": chunk_gla}, f"fla-core {version('fla-core')}")


def kda() -> tuple[Any, str]:
    """fla's KDA ops module (`chunk_kda`, `fused_recurrent_kda`) and 'fla-core <version>'."""
    try:
        from fla.ops import kda as ops  # type: ignore[import-not-found]
    except ImportError as exc:
        raise PeerUnavailable(f"KDA layers need fla (flash-linear-attention), which is not "
                              f"installed: {exc}") from None
    return ops, f"fla-core {version('fla-core')}"
