"""FLOP and byte counts of the Mamba-1 selective scan forward (used by bench and `flopkb verify`).

FLOPs, per state element (b, d, n) and step t, as the fused kernel does them:
    delta*A (1), exp (1), decay*h + input (2, one FMA), (delta*u)*B (1), h*C and its sum over n (2)
  = 7; plus per (b, d, t): delta*u (1), D*u + add (2) and, with the options, bias add (1) and
    softplus (3: exp, add, log). exp/log count as one FLOP each (they run on the special-function
    unit, which is slower than an FMA: see README).
Bytes: the fewest a kernel must move: u, delta, B, C read once, y written once, A/D/bias read once.
"""

from __future__ import annotations


def flops(
    batch: int, dim: int, steps: int, dstate: int,
    has_d: bool = True, has_bias: bool = False, softplus: bool = False,
) -> int:
    """Floating-point operations of one forward pass, counted as in the module docstring."""
    per_row_step = 1 + (2 if has_d else 0) + (1 if has_bias else 0) + (3 if softplus else 0)
    return batch * dim * steps * (7 * dstate + per_row_step)


def bytes_moved(
    batch: int, dim: int, steps: int, dstate: int,
    in_bytes: int = 2, bc_bytes: int = 2, out_bytes: int = 2,
    has_d: bool = True, has_bias: bool = False,
) -> int:
    """Minimum device-memory traffic of one forward pass (each tensor touched once)."""
    rows = batch * dim * steps
    params = dim * dstate * 4 + (dim * 4 if has_d else 0) + (dim * 4 if has_bias else 0)
    return rows * (2 * in_bytes + out_bytes) + 2 * batch * dstate * steps * bc_bytes + params
