"""FLOP and byte counts of the Mamba-1 selective scan (used by bench and `flopkb verify`).

Forward FLOPs, per state element (b, d, n) and step t, as the fused kernel does them:
    delta*A (1), exp (1), decay*h + input (2, one FMA), (delta*u)*B (1), h*C and its sum over n (2)
  = 7; plus per (b, d, t): delta*u (1), D*u + add (2) and, with the options, bias add (1) and
    softplus (3: exp, add, log). exp/log count as one FLOP each (they run on the special-function
    unit, which is slower than an FMA: see README).
Backward FLOPs (backward.py's design), per state element and step: two recomputes of the forward
recurrence without the C contraction (5 each: delta*A, exp, (delta*u)*B, FMA 2) and the reverse
step (15: dh = r + dy*C 2, g = dh*a*h 2, dA += delta*g 2, sum_n dh*B 2, sum_n A*g 2,
sum_d dh*delta*u 2, sum_d dy*h 2, r = a*dh 1) = 25; per (b, d, t): delta*u twice (2), ddelta'
(ln2 scale 1, + u*s 2), du (delta*s 1) = 6, + D*dy and dD (4) with D, + bias add twice and the
dbias sum (3) with a bias, + softplus twice (6) and its derivative (exp, add, divide, multiply 4)
with softplus; plus the sums of the per-program dB/dC partials (2 B N T per channel block) and of
the per-batch dA/dD/dbias partials.
Bytes: `bytes_moved` / `backward_bytes_min` are the fewest a kernel must move (each tensor once);
`backward_bytes` is what backward.py's design moves through device memory (see README).
"""

from __future__ import annotations


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


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


def ckpt_bytes(batch: int, dim: int, steps: int, dstate: int, ckpt_every: int) -> int:
    """float32 states the training forward writes (and the backward reads): one per chunk
    boundary strictly inside T."""
    return batch * (_cdiv(steps, ckpt_every) - 1) * dim * dstate * 4


def backward_flops(
    batch: int, dim: int, steps: int, dstate: int, block_d: int,
    has_d: bool = True, has_bias: bool = False, softplus: bool = False,
) -> int:
    """Floating-point operations of backward.py's backward, counted as in the module docstring
    (`block_d`: channels per program, which sets how many dB/dC partials are summed)."""
    per_row_step = (6 + (4 if has_d else 0) + (3 if has_bias else 0)
                    + (10 if softplus else 0))
    partial_sums = 2 * batch * dstate * steps * _cdiv(dim, block_d)
    batch_sums = batch * dim * (dstate + (1 if has_d else 0) + (1 if has_bias else 0))
    return batch * dim * steps * (25 * dstate + per_row_step) + partial_sums + batch_sums


def backward_bytes_min(
    batch: int, dim: int, steps: int, dstate: int,
    in_bytes: int = 2, bc_bytes: int = 2,
    has_d: bool = True, has_bias: bool = False,
) -> int:
    """Fewest bytes any backward must move: u, delta, dy, B, C read and du, ddelta, dB, dC
    written once; A (read, dA written) and D, bias (read, gradient written) once."""
    rows = batch * dim * steps
    params = 2 * (dim * dstate * 4 + (dim * 4 if has_d else 0) + (dim * 4 if has_bias else 0))
    return rows * 5 * in_bytes + 4 * batch * dstate * steps * bc_bytes + params


def backward_bytes(
    batch: int, dim: int, steps: int, dstate: int, block_d: int, ckpt_every: int,
    in_bytes: int = 2, bc_bytes: int = 2,
    has_d: bool = True, has_bias: bool = False, atomic_bc: bool = False,
) -> int:
    """Device-memory bytes of backward.py's design: the minimum, plus the checkpoints read, the
    dB/dC float32 partials (one [B, T, N] row per channel block, written by the kernel, read and
    summed to [B, T, N] by torch; with `atomic_bc` one zeroed [B, T, N] each, the atomic adds
    landing in L2 and written back once), the [B, T, N] results read again by the transpose to
    [B, N, T], and the dA/dD/dbias per-batch partials written and read. The second read of u
    and delta (phase 2 after phase 1, within one chunk of BLOCK_D x K elements) and the scratch of
    every 4th state are counted in `backward_l2_bytes`, not here."""
    rows_bc = batch * steps * dstate * 4
    per_block = 2 * 2 * _cdiv(dim, block_d) * rows_bc + 2 * rows_bc
    partials = 2 * 2 * rows_bc if atomic_bc else per_block
    transpose = 2 * rows_bc
    batch_partials = 2 * batch * dim * (dstate + 2) * 4
    return (backward_bytes_min(batch, dim, steps, dstate, in_bytes, bc_bytes, has_d, has_bias)
            + ckpt_bytes(batch, dim, steps, dstate, ckpt_every) + partials + transpose
            + batch_partials)


def backward_l2_bytes(batch: int, dim: int, steps: int, dstate: int, in_bytes: int = 2) -> int:
    """Traffic the design expects to stay in L2: the scratch (a float32 state written and read
    back every 4 steps: 2 bytes per state element and step) and the second read of u and delta."""
    return 2 * batch * dim * steps * dstate + 2 * batch * dim * steps * in_bytes


def training_flops(
    batch: int, dim: int, steps: int, dstate: int, block_d: int,
    has_d: bool = True, has_bias: bool = False, softplus: bool = False,
) -> int:
    """Forward + backward FLOPs (the training forward does the forward's arithmetic)."""
    return (flops(batch, dim, steps, dstate, has_d, has_bias, softplus)
            + backward_flops(batch, dim, steps, dstate, block_d, has_d, has_bias, softplus))


def training_bytes(
    batch: int, dim: int, steps: int, dstate: int, block_d: int, ckpt_every: int,
    in_bytes: int = 2, bc_bytes: int = 2,
    has_d: bool = True, has_bias: bool = False, atomic_bc: bool = False,
) -> int:
    """Forward (with its checkpoint writes and the B/C time-major copies, read + written) plus
    the backward's design bytes."""
    bc_copies = 2 * 2 * batch * dstate * steps * bc_bytes
    return (bytes_moved(batch, dim, steps, dstate, in_bytes, bc_bytes, in_bytes, has_d, has_bias)
            + ckpt_bytes(batch, dim, steps, dstate, ckpt_every) + bc_copies
            + backward_bytes(batch, dim, steps, dstate, block_d, ckpt_every, in_bytes, bc_bytes,
                             has_d, has_bias, atomic_bc))


# The decode step's state is float32: read once and written once per step.
STATE_BYTES = 4


def step_flops(b: int, dim: int, n: int) -> int:
    """One decode step (`step.py`), 7 B DIM N: per state element dt*A, exp, decay*h, (dt x)*B,
    add, C*h and its sum."""
    return 7 * b * dim * n


def step_bytes(b: int, dim: int, n: int, *, elt: int = 2) -> int:
    """One decode step: state read + written 2*4*B*DIM*N, plus A (4*DIM*N), x, dt, y
    (3*B*DIM*elt), B, C (2*B*N*elt), D, dt_bias (2*4*DIM); `elt` bytes per activation."""
    return (2 * STATE_BYTES * b * dim * n + STATE_BYTES * dim * n + 3 * b * dim * elt
            + 2 * b * n * elt + 2 * STATE_BYTES * dim)
