"""Selective scan (kernels/selective_scan) vs its PyTorch reference (CPU through TRITON_INTERPRET=1,
or a GPU): the forward, the backward and the decode step.

Relative-error bounds ||out - ref|| / ||ref||, against a float64 reference on the same inputs:
fp32 inputs 1e-5 (fp32 arithmetic; exp2 and a different summation order), bf16 inputs 1e-2
(the output is rounded to bf16: 2^-9 per element).

Backward: the reference's gradients are taken in float64 on the same (fp32) inputs; the kernel's
state and gradients are float32. Bound ||grad - ref|| / ||ref|| < 1e-5 for fp32 inputs (measured
~2e-7: the sums run in a different order and exp2 replaces exp). Sizes are small and odd (D=6,
T=23/37, N=5/8) so that every mask (channels, states, steps past T, a partial last chunk, T shorter
than a chunk) is crossed.
"""

from __future__ import annotations

import pytest
import torch
from accuracy import assert_step_matches, run_step, step_inputs

from flopkb.kernelpkg import load_op

BOUND = {torch.float32: 1e-5, torch.bfloat16: 1e-2}
# Every code path of the wrapper: the default (sequential, unrolled by 4, [BLOCK_D, 4] tiles, B/C
# copied time-major), the plain one-step loop on Mamba's layout, the time-major copies, delta'
# prepared per column and per tile, and the associative schedule.
CONFIGS = {
    "default": {},
    "plain": {"unroll": 1, "transpose_bc": False},
    "time_major": {"time_major": True},
    "sp_columns": {"sp_tile": False},
    "sp_tile": {"sp_tile": True},
    "assoc": {"schedule": "assoc", "block_t": 8},
}


def _inputs(device, batch=2, dim=5, steps=37, dstate=7, dtype=torch.float32):
    u = torch.randn(batch, dim, steps, device=device).to(dtype)
    delta = (torch.rand(batch, dim, steps, device=device) * 0.5).to(dtype)
    A = -(torch.rand(dim, dstate, device=device) * 2 + 0.1)
    Bm = torch.randn(batch, dstate, steps, device=device).to(dtype)
    Cm = torch.randn(batch, dstate, steps, device=device).to(dtype)
    return u, delta, A, Bm, Cm


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    assert not torch.isnan(out).any(), "kernel left unwritten (NaN) elements"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def _ref64(ref_fn, u, delta, A, Bm, Cm, **kw):
    return ref_fn(u.double(), delta.double(), A, Bm.double(), Cm.double(), **kw)


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("options", ["plain", "full"])
def test_selective_scan_fp32_matches_float64_reference(kernels, device, config, options):
    from flopkb_kernels.selective_scan.forward import selective_scan
    from flopkb_kernels.selective_scan.reference import selective_scan_reference

    u, delta, A, Bm, Cm = _inputs(device)
    kw = {}
    if options == "full":
        dim = u.shape[1]
        kw = {"Dskip": torch.randn(dim, device=device),
              "delta_bias": torch.randn(dim, device=device) * 0.3, "delta_softplus": True}
    out = torch.full_like(u, float("nan"))
    y = selective_scan(u, delta, A, Bm, Cm, **kw, **CONFIGS[config], out=out)
    assert y is out
    assert _rel(y, _ref64(selective_scan_reference, u, delta, A, Bm, Cm, **kw)) < BOUND[u.dtype]


@pytest.mark.parametrize("config", ["default", "plain", "assoc"])
def test_selective_scan_bf16_odd_sizes(kernels, device, config):
    from flopkb_kernels.selective_scan.forward import selective_scan
    from flopkb_kernels.selective_scan.reference import selective_scan_reference

    u, delta, A, Bm, Cm = _inputs(device, batch=1, dim=3, steps=19, dstate=5,
                                  dtype=torch.bfloat16)
    Dskip = torch.randn(3, device=device)
    out = torch.full_like(u, float("nan"))
    y = selective_scan(u, delta, A, Bm, Cm, Dskip, **CONFIGS[config], out=out)
    ref = _ref64(selective_scan_reference, u, delta, A, Bm, Cm, Dskip=Dskip)
    assert y.dtype == torch.bfloat16
    assert _rel(y, ref) < BOUND[torch.bfloat16]


def test_schedules_agree_with_each_other(kernels, device):
    from flopkb_kernels.selective_scan.forward import selective_scan

    args = _inputs(device, steps=40)
    seq = selective_scan(*args, schedule="sequential")
    assoc = selective_scan(*args, schedule="assoc", block_t=16)
    assert _rel(assoc, seq) < 1e-5


def test_reference_float32_matches_float64(kernels, device):
    from flopkb_kernels.selective_scan.reference import selective_scan_reference

    args = _inputs(device)
    y32 = selective_scan_reference(*args)
    assert y32.dtype == torch.float32
    assert _rel(y32, _ref64(selective_scan_reference, *args)) < 1e-5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("u_2d", "expected u of shape"),
        ("delta_shape", "expected delta of shape"),
        ("A_dtype", "expected A of dtype float32"),
        ("B_noncontig", "expected Bm to be contiguous"),
        ("C_type", "expected Cm to be a torch.Tensor"),
        ("schedule", "expected schedule"),
        ("unroll", "expected unroll"),
        ("out_dtype", "expected out of dtype"),
    ],
)
def test_wrapper_rejects_bad_arguments(kernels, device, change, message):
    from flopkb_kernels.selective_scan.forward import selective_scan

    u, delta, A, Bm, Cm = _inputs(device)
    kw: dict = {}
    if change == "u_2d":
        u = u[0]
    elif change == "delta_shape":
        delta = delta[:, :, :-1].contiguous()
    elif change == "A_dtype":
        A = A.double()
    elif change == "B_noncontig":
        Bm = Bm.transpose(1, 2).contiguous().transpose(1, 2)
    elif change == "C_type":
        Cm = Cm.tolist()
    elif change == "schedule":
        kw["schedule"] = "parallel"
    elif change == "unroll":
        kw["unroll"] = 3
    elif change == "out_dtype":
        kw["out"] = torch.empty_like(u, dtype=torch.float64)
    with pytest.raises(ValueError, match=message):
        selective_scan(u, delta, A, Bm, Cm, **kw)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_selective_scan_gpu_medium(kernels):
    from flopkb_kernels.selective_scan.forward import selective_scan
    from flopkb_kernels.selective_scan.reference import selective_scan_reference

    args = _inputs("cuda", batch=2, dim=96, steps=300, dstate=16, dtype=torch.bfloat16)
    ref = _ref64(selective_scan_reference, *args)
    for config in CONFIGS.values():
        y = selective_scan(*args, **config, out=torch.full_like(args[0], float("nan")))
        assert _rel(y, ref) < BOUND[torch.bfloat16]


GRAD_BOUND = 1e-5
NAMES = ("u", "delta", "A", "Bm", "Cm", "Dskip", "delta_bias")
# name: (with Dskip, with delta_bias, delta_softplus)
OPTIONS = {
    "plain": (False, False, False),
    "skip_bias": (True, True, False),
    "softplus": (False, False, True),
    "full": (True, True, True),
}


def _grad_inputs(device, batch, dim, steps, dstate, options, dtype=torch.float32):
    has_d, has_bias, softplus = OPTIONS[options]
    u = torch.randn(batch, dim, steps, device=device)
    # Softplus maps any delta to a positive step; without it delta itself must be positive.
    delta = (torch.randn(batch, dim, steps, device=device) * 0.5 if softplus
             else torch.rand(batch, dim, steps, device=device) * 0.5 + 0.05)
    A = -(torch.rand(dim, dstate, device=device) * 2 + 0.1)
    Bm = torch.randn(batch, dstate, steps, device=device)
    Cm = torch.randn(batch, dstate, steps, device=device)
    Dskip = torch.randn(dim, device=device) if has_d else None
    bias = torch.randn(dim, device=device) * 0.3 if has_bias else None
    ins = [u.to(dtype), delta.to(dtype), A, Bm.to(dtype), Cm.to(dtype), Dskip, bias]
    return ins, softplus


def _reference_grads(ins, softplus, dy):
    from flopkb_kernels.selective_scan.reference import selective_scan_reference

    leaves = [t.double().requires_grad_() if t is not None else None for t in ins]
    y = selective_scan_reference(*leaves, softplus)
    y.backward(dy.double())
    return y.detach(), [t.grad if t is not None else None for t in leaves]


# Every option set with 3 chunks (the last partial); two with T=37, N=8, 3 chunks of 16.
CASES = [(options, 2, 23, 5, 8) for options in OPTIONS] + [
    (options, 1, 37, 8, 16) for options in ("plain", "full")]


@pytest.mark.parametrize(("options", "batch", "steps", "dstate", "ckpt_every"), CASES)
def test_autograd_matches_reference_gradients(kernels, device, options, batch, steps, dstate,
                                              ckpt_every):
    from flopkb_kernels.selective_scan.forward import selective_scan

    ins, softplus = _grad_inputs(device, batch, 6, steps, dstate, options)
    leaves = [t.clone().requires_grad_() if t is not None else None for t in ins]
    y = selective_scan(*leaves, softplus, backward={"ckpt_every": ckpt_every})
    assert y.grad_fn is not None
    dy = torch.randn_like(y)
    y.backward(dy)
    y_ref, grads_ref = _reference_grads(ins, softplus, dy)
    assert _rel(y.detach(), y_ref) < GRAD_BOUND
    for name, leaf, ref in zip(NAMES, leaves, grads_ref, strict=True):
        if leaf is None:
            continue
        assert leaf.grad is not None and leaf.grad.shape == leaf.shape, name
        assert _rel(leaf.grad, ref) < GRAD_BOUND, name


def _forward_with_ckpt(ins, softplus, ckpt_every):
    from flopkb_kernels.selective_scan.forward import _launch_forward

    y = torch.full_like(ins[0], float("nan"))
    ckpt, _ = _launch_forward(
        *ins, softplus, y, schedule="sequential", block_d=None, block_d_scale=1.0, block_t=16,
        num_warps=None, transpose_bc=True, time_major=False, unroll=4, sp_tile=True,
        ckpt_every=ckpt_every,
    )
    return y, ckpt


@pytest.mark.parametrize("atomic_bc", [False, True])
def test_backward_writes_every_gradient_element(kernels, device, atomic_bc):
    """NaN-filled outputs, partials and scratch; two channel blocks (the second one partial);
    dB and dC as per-program partials or added atomically."""
    from flopkb_kernels.selective_scan.backward import selective_scan_bwd

    ins, softplus = _grad_inputs(device, 2, 7, 29, 5, "full")
    _, ckpt = _forward_with_ckpt(ins, softplus, 12)
    dy = torch.randn_like(ins[0])
    grads = selective_scan_bwd(*ins, softplus, dy, ckpt, ckpt_every=12, block_d=4,
                               atomic_bc=atomic_bc, nan_fill=True)
    _, grads_ref = _reference_grads(ins, softplus, dy)
    for name, got, ref in zip(NAMES, grads, grads_ref, strict=True):
        assert got.dtype == (torch.float32 if name in ("A", "Dskip", "delta_bias")
                             else ins[NAMES.index(name)].dtype)
        assert _rel(got, ref) < GRAD_BOUND, name


def test_forward_saves_the_state_at_chunk_boundaries(kernels, device):
    ins, softplus = _grad_inputs(device, 2, 6, 30, 5, "full")
    _, ckpt = _forward_with_ckpt(ins, softplus, 8)
    u, delta, A, Bm, _, _, bias = (t.double() for t in ins)
    dl = torch.nn.functional.softplus(delta + bias[None, :, None])
    h = torch.zeros(2, 6, 5, dtype=torch.float64)
    states = []
    for t in range(30):
        h = torch.exp(dl[:, :, t, None] * A) * h + (dl * u)[:, :, t, None] * Bm[:, None, :, t]
        if (t + 1) % 8 == 0 and t + 1 < 30:
            states.append(h)
    assert ckpt.shape == (2, 3, 6, 5)
    assert _rel(ckpt, torch.stack(states, dim=1)) < GRAD_BOUND


def test_plain_call_builds_no_graph_and_matches_autograd_forward(kernels, device):
    from flopkb_kernels.selective_scan.forward import selective_scan

    ins, softplus = _grad_inputs(device, 1, 6, 23, 5, "full")
    plain = selective_scan(*ins, softplus)
    assert plain.grad_fn is None
    with torch.no_grad():
        leaves = [t.clone().requires_grad_() if t is not None else None for t in ins]
        assert selective_scan(*leaves, softplus).grad_fn is None
    tracked = selective_scan(*leaves, softplus)
    assert tracked.grad_fn is not None
    assert torch.equal(tracked.detach(), plain)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("ckpt_every", "expected ckpt_every a positive multiple of 4"),
        ("ckpt_shape", "expected ckpt of shape"),
        ("dy_dtype", "expected dy of dtype"),
        ("out_with_grad", "expected out=None when gradients are required"),
        ("assoc_with_grad", "expected schedule 'sequential' when gradients are required"),
        ("forward_ckpt_every", "expected ckpt_every a positive multiple of 4"),
        ("backward_option", "expected backward options among"),
    ],
)
def test_backward_rejects_bad_arguments(kernels, device, change, message):
    from flopkb_kernels.selective_scan.backward import selective_scan_bwd
    from flopkb_kernels.selective_scan.forward import selective_scan

    ins, softplus = _grad_inputs(device, 1, 6, 23, 5, "full")
    ckpt = torch.zeros(1, 2, 6, 5, device=device)
    dy = torch.randn_like(ins[0])
    with pytest.raises(ValueError, match=message):
        if change == "ckpt_every":
            selective_scan_bwd(*ins, softplus, dy, ckpt, ckpt_every=10)
        elif change == "ckpt_shape":
            selective_scan_bwd(*ins, softplus, dy, ckpt[:, :1].contiguous(), ckpt_every=8)
        elif change == "dy_dtype":
            selective_scan_bwd(*ins, softplus, dy.double(), ckpt, ckpt_every=8)
        else:
            leaves = [t.clone().requires_grad_() if t is not None else None for t in ins]
            kw = {
                "out_with_grad": {"out": torch.empty_like(ins[0])},
                "assoc_with_grad": {"schedule": "assoc"},
                "forward_ckpt_every": {"backward": {"ckpt_every": 6}},
                "backward_option": {"backward": {"chunk": 64}},
            }[change]
            selective_scan(*leaves, softplus, **kw)


def test_cost_formulas_by_hand(kernels):
    from flopkb_kernels.selective_scan import cost

    # 3 chunks of 4 steps in T=10: 2 saved states of B x D x N float32.
    assert cost.ckpt_bytes(2, 3, 10, 4, 4) == 2 * 2 * 3 * 4 * 4
    # One element, one step, no options: 25 + 6 per element, 2 for the dB/dC partial sums and 1
    # for the dA sum over the batch.
    assert cost.backward_flops(1, 1, 1, 1, 1, False, False, False) == 34
    assert cost.backward_flops(1, 1, 1, 1, 1, True, True, True) == 25 + 6 + 4 + 3 + 10 + 2 + 3
    # u, delta, dy read and du, ddelta written (bf16), B, C, dB, dC (bf16), A and dA (fp32).
    assert cost.backward_bytes_min(1, 1, 1, 1, has_d=False) == 5 * 2 + 4 * 2 + 2 * 4
    # Partials: 2 blocks of 1 channel -> 2 x (2 x 2 x 4 + 4) bytes, + transpose 8, + ckpt 0,
    # + dA/dD/dbias partials 2 x (1 + 2) x 4 on top of the minimum of 2 channels.
    assert cost.backward_bytes(1, 2, 1, 1, 1, 4, has_d=False) == (
        cost.backward_bytes_min(1, 2, 1, 1, has_d=False) + 2 * (2 * 2 * 4 + 4) + 8 + 2 * 2 * 3 * 4)
    assert cost.backward_bytes(1, 2, 1, 1, 1, 4, has_d=False, atomic_bc=True) == (
        cost.backward_bytes_min(1, 2, 1, 1, has_d=False) + 2 * 2 * 4 + 8 + 2 * 2 * 3 * 4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dstate", [16, 64])
def test_backward_gpu_bf16_medium(kernels, dstate):
    """bf16 inputs at a medium size against the float32 reference on the upcast inputs."""
    from flopkb_kernels.selective_scan.backward import BACKWARD_VARIANTS
    from flopkb_kernels.selective_scan.forward import selective_scan

    ins, softplus = _grad_inputs("cuda", 2, 96, 300, dstate, "full", dtype=torch.bfloat16)
    dy = torch.randn_like(ins[0])
    _, grads_ref = _reference_grads([t.float() if t is not None else None for t in ins],
                                    softplus, dy.float())
    for variant in BACKWARD_VARIANTS.values():
        leaves = [t.clone().requires_grad_() if t is not None else None for t in ins]
        selective_scan(*leaves, softplus, backward=variant).backward(dy)
        for name, leaf, ref in zip(NAMES, leaves, grads_ref, strict=True):
            # bf16 gradients of bf16 inputs: 2^-9 rounding per element, plus bf16 dy.
            assert _rel(leaf.grad, ref) < 2e-2, (variant, name)


# Decode step (step.py): y and the in-place state update against `mamba1_step_reference`
# (accuracy.STEP_TOL).


def _step_inputs(b: int, dim: int, n: int, dtype: torch.dtype) -> dict:
    return step_inputs(dtype, state=(b, dim, n), x=(b, dim), dt=(b, dim), A=(dim, n), BC=(b, n),
                       D=dim)


def _run_step(args: dict, **kw) -> tuple:
    step, ref = load_op("selective_scan", "step"), load_op("selective_scan", "reference")
    return run_step(step.mamba1_step, ref.mamba1_step_reference, args, **kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("b", "dim", "n"), [(3, 37, 5), (2, 19, 16)])
def test_mamba1_step_matches_reference(kernels, dtype, b, dim, n):
    args = _step_inputs(b, dim, n, dtype)
    assert_step_matches(_run_step(args), args, dtype)


def test_mamba1_step_without_optional_inputs(kernels):
    args = _step_inputs(2, 37, 5, torch.float32)
    del args["D"], args["dt_bias"]
    y, y_ref, st, st_ref = _run_step(args, dt_softplus=False)
    assert _rel(y, y_ref) < 1e-5
    assert _rel(st, st_ref) < 1e-5


def test_mamba1_step_small_block_covers_every_channel(kernels):
    y, y_ref, _, _ = _run_step(_step_inputs(1, 37, 5, torch.float32), block_d=4)
    assert _rel(y, y_ref) < 1e-5


def test_mamba1_step_validates_inputs(kernels):
    step = load_op("selective_scan", "step")
    args = _step_inputs(2, 7, 5, torch.float32)
    with pytest.raises(ValueError, match="state"):
        step.mamba1_step(**{**args, "state": args["state"].bfloat16()})
    with pytest.raises(ValueError, match="Bm"):
        step.mamba1_step(**{**args, "Bm": args["Bm"][:, :4].contiguous()})


def test_mamba1_step_cost_state_term_dominates(kernels):
    # the README's example: B=16, DIM=4096, N=16, bf16 activations; state 8.4 MB of 9.1 MB
    cost = load_op("selective_scan", "cost")
    total = cost.step_bytes(16, 4096, 16)
    assert total == 9077760
    assert 0.9 < 2 * 4 * 16 * 4096 * 16 / total < 0.95
    assert cost.step_flops(16, 4096, 16) == 7 * 16 * 4096 * 16
