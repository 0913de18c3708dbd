"""SSD kernels (kernels/ssd) vs the PyTorch references, and vs each other: the forward schedules
(scan, chunked, quadratic), the per-channel decay (claim A5), the chunked backward, the decode step.

Relative-error bounds ||out - ref|| / ||ref|| against a float64 reference on the same inputs:
fp32 inputs 1e-5 (fp32 arithmetic; the chunked and quadratic dots run in IEEE fp32), bf16 inputs
3e-2 (the tensor-core schedules round the decay-weighted scores and the carried state to bf16
before their dots, and the output is bf16).

Backward: every gradient (x, dt, A, B, C, D) is compared by ||g - g_ref|| / ||g_ref|| against
autograd through `ssd_reference` in float64 on the same (rounded) inputs. Bounds: fp32 inputs 5e-5
(the kernels run fp32 IEEE dots; dA is one sum per head over all steps whose terms cancel, which
costs a few units of 1e-6 at these sizes), bf16 inputs 3e-2 (as the forward: tensor-core operands
in bf16, bf16 dx, dB, dC). Every buffer the backward allocates is NaN-filled first, so an element
no kernel writes, or one read before it is written, shows as NaN.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from accuracy import assert_step_matches, run_step, step_inputs
from ssd_inputs import BOUND, SHAPE, rel, ssd_inputs

from flopkb.kernelpkg import load_op


def ref64(x, dt, A, Bm, Cm, Dskip=None):
    from flopkb_kernels.ssd.reference import ssd_reference

    return ssd_reference(x.double(), dt.double(), A, Bm.double(), Cm.double(), Dskip)


def _schedules():
    from flopkb_kernels.ssd.chunked import ssd_chunked
    from flopkb_kernels.ssd.quadratic import ssd_quadratic
    from flopkb_kernels.ssd.scan import ssd_scan

    return {
        "scan": ssd_scan,
        "chunked16": lambda *a, **k: ssd_chunked(*a, chunk_size=16, **k),
        "chunked32": lambda *a, **k: ssd_chunked(*a, chunk_size=32, **k),
        "chunked64": lambda *a, **k: ssd_chunked(*a, chunk_size=64, **k),
        "quadratic": ssd_quadratic,
    }


@pytest.mark.parametrize("name", ["scan", "chunked16", "chunked32", "chunked64", "quadratic"])
def test_fp32_matches_float64_reference(kernels, device, name):
    x, dt, A, Bm, Cm = ssd_inputs(device, **SHAPE)
    Dskip = torch.randn(SHAPE["heads"], device=device)
    out = torch.full_like(x, float("nan"))
    y = _schedules()[name](x, dt, A, Bm, Cm, Dskip, out=out)
    assert y is out
    assert rel(y, ref64(x, dt, A, Bm, Cm, Dskip)) < BOUND[torch.float32]


@pytest.mark.parametrize("name", ["scan", "chunked32", "quadratic"])
def test_bf16_matches_reference(kernels, device, name):
    x, dt, A, Bm, Cm = ssd_inputs(device, **(SHAPE | {"headdim": 17, "dstate": 9}),
                                  dtype=torch.bfloat16)
    y = _schedules()[name](x, dt, A, Bm, Cm, out=torch.full_like(x, float("nan")))
    assert y.dtype == torch.bfloat16
    assert rel(y, ref64(x, dt, A, Bm, Cm)) < BOUND[torch.bfloat16]


def test_scan_and_chunked_agree(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked
    from flopkb_kernels.ssd.scan import ssd_scan

    args = ssd_inputs(device, **(SHAPE | {"steps": 70}))
    assert rel(ssd_chunked(*args, chunk_size=32), ssd_scan(*args)) < 1e-5
    assert rel(ssd_scan(*args, block_p=2, num_warps=4), ssd_scan(*args)) < 1e-6


def test_long_chunk_sizes_on_a_short_sequence(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked

    args = ssd_inputs(device, **(SHAPE | {"steps": 21, "heads": 2, "groups": 1}))
    ref = ref64(*args)
    for chunk in (128, 256):
        y = ssd_chunked(*args, chunk_size=chunk, out=torch.full_like(args[0], float("nan")))
        assert rel(y, ref) < BOUND[torch.float32]


def test_references_agree(kernels, device):
    from flopkb_kernels.ssd.reference import ssd_quadratic_reference, ssd_reference

    args = ssd_inputs(device, **SHAPE)
    Dskip = torch.randn(SHAPE["heads"], device=device)
    seq32 = ssd_reference(*args, Dskip)
    quad64 = ssd_quadratic_reference(
        args[0].double(), args[1].double(), args[2], args[3].double(), args[4].double(), Dskip
    )
    assert rel(quad64, ref64(*args, Dskip)) < 1e-12
    assert rel(seq32, quad64) < 1e-5


def test_stages_run_in_order_and_split_matmul_work(kernels, device):
    from flopkb_kernels.ssd.chunked import MATMUL_STAGES, ssd_chunked_stages

    args = ssd_inputs(device, **SHAPE)
    run = ssd_chunked_stages(*args, chunk_size=16, out=torch.full_like(args[0], float("nan")))
    assert list(run.stages) == ["chunk_bmm", "chunk_state", "state_passing", "chunk_scan"]
    assert set(MATMUL_STAGES) <= set(run.stages)
    assert rel(run(), ref64(*args)) < BOUND[torch.float32]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("x_3d", "expected x of shape"),
        ("dt_shape", "expected dt of shape"),
        ("A_dtype", "expected A of dtype float32"),
        ("groups", "expected a group count dividing H"),
        ("C_dtype", "expected Cm of dtype"),
        ("x_noncontig", "expected x to be contiguous"),
        ("D_shape", "expected Dskip of shape"),
        ("chunk", "expected chunk_size"),
    ],
)
def test_wrappers_reject_bad_arguments(kernels, device, change, message):
    from flopkb_kernels.ssd.chunked import ssd_chunked

    x, dt, A, Bm, Cm = ssd_inputs(device, **SHAPE)
    Dskip, kw = None, {}
    if change == "x_3d":
        x = x[..., 0]
    elif change == "dt_shape":
        dt = dt[:, :-1].contiguous()
    elif change == "A_dtype":
        A = A.half()
    elif change == "groups":
        Bm = torch.randn(2, 45, 3, 7, device=device)
        Cm = Bm.clone()
    elif change == "C_dtype":
        Cm = Cm.double()
    elif change == "x_noncontig":
        x = x.transpose(2, 3).contiguous().transpose(2, 3)
    elif change == "D_shape":
        Dskip = torch.randn(3, device=device)
    elif change == "chunk":
        kw["chunk_size"] = 48
    with pytest.raises(ValueError, match=message):
        ssd_chunked(x, dt, A, Bm, Cm, Dskip, **kw)
    if change != "chunk":
        for f in _schedules().values():
            with pytest.raises(ValueError, match=message):
                f(x, dt, A, Bm, Cm, Dskip)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_bf16_all_schedules(kernels):
    args = ssd_inputs("cuda", batch=2, steps=700, heads=4, headdim=64, groups=1, dstate=128,
                      dtype=torch.bfloat16)
    ref = ref64(*args)
    for name, f in _schedules().items():
        y = f(*args, out=torch.full_like(args[0], float("nan")))
        assert rel(y, ref) < BOUND[torch.bfloat16], name


def _pc_ref64(x, dt, g, Bm, Cm, Dskip=None):
    from flopkb_kernels.ssd.reference import ssd_per_channel_reference

    return ssd_per_channel_reference(
        x.double(), dt.double(), g.double(), Bm.double(), Cm.double(), Dskip
    )


@pytest.mark.parametrize("chunk", [16, 32, 64])
def test_per_channel_matches_reference(kernels, device, chunk):
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE)
    g = -torch.rand(*dt.shape, SHAPE["dstate"], device=device) * 0.3
    Dskip = torch.randn(SHAPE["heads"], device=device)
    out = torch.full_like(x, float("nan"))
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, Dskip, chunk_size=chunk, out=out)
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm, Dskip)) < BOUND[torch.float32]


def test_per_channel_bf16(kernels, device):
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE, dtype=torch.bfloat16)
    g = -torch.rand(*dt.shape, SHAPE["dstate"], device=device) * 0.3
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=32,
                                out=torch.full_like(x, float("nan")))
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm)) < BOUND[torch.bfloat16]


def test_per_channel_with_shared_decay_equals_scalar_kernel(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, A, Bm, Cm = ssd_inputs(device, **SHAPE)
    g = (dt * A)[..., None].expand(*dt.shape, SHAPE["dstate"]).contiguous()
    scalar = ssd_chunked(x, dt, A, Bm, Cm, chunk_size=32)
    per_channel = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=32)
    assert rel(per_channel, scalar) < 1e-5


def test_per_channel_rejects_bad_decay_shape(kernels, device):
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE)
    g = -torch.rand(*dt.shape, SHAPE["dstate"] + 1, device=device)
    with pytest.raises(ValueError, match="expected log_decay of shape"):
        ssd_chunked_per_channel(x, dt, g, Bm, Cm)


@pytest.mark.parametrize("chunk", [32, 64])
def test_per_channel_strong_decay_does_not_overflow(kernels, device, chunk):
    # A 64-row block whose log-decay sums to about -190 per channel: the factored diagonal tile
    # (C_i exp(G_i - G_r), B_j exp(G_r - G_j)) would need exp(+190) and exp(-190), past fp32.
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    shape = SHAPE | {"steps": 70}
    x, dt, _, Bm, Cm = ssd_inputs(device, **shape)
    g = -torch.rand(*dt.shape, shape["dstate"], device=device) * 0.3
    g[..., :3] = -3.0 - torch.rand(*dt.shape, 3, device=device)
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=chunk,
                                out=torch.full_like(x, float("nan")))
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm)) < BOUND[torch.float32]


def test_per_channel_fp16_decay_past_its_range(kernels, device):
    # fp16 tiles end at 2^16: a 32-row block decaying by ~e^-16 per channel already needs the
    # sliced diagonal in half precision.
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE, dtype=torch.float16)
    g = -torch.rand(*dt.shape, SHAPE["dstate"], device=device) * 0.3
    g[..., :2] = -0.5 - 0.2 * torch.rand(*dt.shape, 2, device=device)
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=32,
                                out=torch.full_like(x, float("nan")))
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm)) < BOUND[torch.bfloat16]


GRAD_BOUND = {torch.float32: 5e-5, torch.bfloat16: 3e-2}
NAMES = ("x", "dt", "A", "Bm", "Cm", "Dskip")
# T = 37: not a multiple of any chunk, so the last chunk is partial.
BWD_SHAPE = SHAPE | {"steps": 37}
# For the tests of plumbing rather than numerics: fewer programs for the interpreter to run.
SMALL = {"batch": 1, "steps": 20, "heads": 2, "headdim": 5, "groups": 1, "dstate": 7}


@pytest.fixture
def poisoned(kernels, monkeypatch):
    """The chunked module (forward and autograd Function) with every buffer its backward
    allocates NaN-filled."""
    from flopkb_kernels.ssd import backward, chunked

    def nan_buffer(shape, dtype, device):
        return torch.full(shape, float("nan"), dtype=dtype, device=device)

    monkeypatch.setattr(backward, "_buffer", nan_buffer)
    return chunked


def _inputs(device, shape, dtype=torch.float32, with_d=True):
    x, dt, A, Bm, Cm = ssd_inputs(device, **shape, dtype=dtype)
    Dskip = torch.randn(shape["heads"], device=device) if with_d else None
    return [x, dt, A, Bm, Cm, Dskip]


def _reference_grads(args, dy, chunked_ref: int | None = None):
    from flopkb_kernels.ssd.reference import ssd_chunked_reference, ssd_reference

    leaves = [None if t is None else t.detach().double().requires_grad_() for t in args]
    if chunked_ref is None:
        y = ssd_reference(*leaves)
    else:
        y = ssd_chunked_reference(*leaves, chunk_size=chunked_ref)
    y.backward(dy.double())
    return y.detach(), [None if t is None else t.grad for t in leaves]


def _kernel_grads(f, args, dy):
    leaves = [None if t is None else t.detach().clone().requires_grad_() for t in args]
    y = f(*leaves)
    y.backward(dy)
    return y.detach(), [None if t is None else t.grad for t in leaves]


def _assert_close(got, want, bound):
    for name, g, w in zip(NAMES, got, want, strict=True):
        if w is None:
            assert g is None, name
            continue
        err = rel(g, w)
        assert err < bound, f"d{name}: rel err {err:.2e} >= {bound}"


@pytest.mark.parametrize(
    ("chunk", "fwd_block", "bwd_block", "head_split", "r_in_dx"),
    [(16, 64, 64, None, False), (32, 16, 16, 1, True), (32, 64, 16, 2, False)],
    ids=["chunk16", "chunk32-blocks16-split1-r_in_dx", "chunk32-fwd32-bwd16-split2"],
)
def test_fp32_gradients_match_autograd_through_reference(poisoned, device, chunk, fwd_block,
                                                         bwd_block, head_split, r_in_dx):
    args = _inputs(device, BWD_SHAPE)
    dy = torch.randn_like(args[0])
    cfg = poisoned.BwdConfig(block_m=bwd_block, head_split=head_split, r_in_dx=r_in_dx)
    y, grads = _kernel_grads(
        lambda *a: poisoned.ssd_chunked_fn(*a, chunk_size=chunk, block_m=fwd_block, bwd=cfg),
        args, dy,
    )
    y_ref, want = _reference_grads(args, dy)
    assert rel(y, y_ref) < 1e-5
    _assert_close(grads, want, GRAD_BOUND[torch.float32])
    assert grads[1].dtype == torch.float32 and grads[2].dtype == torch.float32


@pytest.mark.parametrize("r_in_dx", [False, True])
def test_bf16_gradients_match_reference(poisoned, device, r_in_dx):
    args = _inputs(device, BWD_SHAPE | {"headdim": 17, "dstate": 9, "groups": 1},
                   dtype=torch.bfloat16)
    dy = torch.randn_like(args[0])
    cfg = poisoned.BwdConfig(block_m=16, r_in_dx=r_in_dx)
    _, grads = _kernel_grads(
        lambda *a: poisoned.ssd_chunked_fn(*a, chunk_size=32, bwd=cfg), args, dy
    )
    _, want = _reference_grads(args, dy)
    _assert_close(grads, want, GRAD_BOUND[torch.bfloat16])
    assert [g.dtype for g in grads] == [t.dtype for t in args]


def test_ssd_chunked_is_differentiable_only_when_asked(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked

    args = _inputs(device, SMALL, with_d=False)[:5]
    dy = torch.randn_like(args[0])
    plain = ssd_chunked(*args, chunk_size=16)
    assert plain.grad_fn is None
    _, grads = _kernel_grads(lambda *a: ssd_chunked(*a, chunk_size=16), args, dy)
    _, want = _reference_grads([*args, None], dy)
    _assert_close([*grads, None], want, GRAD_BOUND[torch.float32])
    with torch.no_grad():
        assert ssd_chunked(*[t.requires_grad_() for t in args], chunk_size=16).grad_fn is None
    with pytest.raises(ValueError, match="expected out=None when an input requires grad"):
        ssd_chunked(*args, chunk_size=16, out=torch.empty_like(args[0]))


def test_only_requested_gradients_are_returned(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked_fn

    x, dt, A, Bm, Cm, Dskip = _inputs(device, SMALL)
    x.requires_grad_()
    ssd_chunked_fn(x, dt, A, Bm, Cm, Dskip, chunk_size=16).sum().backward()
    assert x.grad is not None and not torch.isnan(x.grad).any()
    assert dt.grad is None and Bm.grad is None and Dskip.grad is None


def test_chunked_reference_equals_step_reference(kernels, device):
    args = _inputs(device, BWD_SHAPE)
    dy = torch.randn_like(args[0])
    y_seq, g_seq = _reference_grads(args, dy)
    y_chk, g_chk = _reference_grads(args, dy, chunked_ref=16)
    assert rel(y_chk, y_seq) < 1e-12
    _assert_close(g_chk, g_seq, 1e-12)


def test_bad_head_split_is_refused(kernels, device):
    from flopkb_kernels.ssd.chunked import BwdConfig, ssd_chunked_fn

    args = [t.requires_grad_() if t is not None else t for t in _inputs(device, BWD_SHAPE)]
    with pytest.raises(ValueError, match="expected head_split dividing the 2 heads per group"):
        ssd_chunked_fn(*args, chunk_size=16, bwd=BwdConfig(head_split=3))


def test_variants_are_valid_configurations(kernels):
    from flopkb_kernels.ssd.chunked import VARIANTS, BwdConfig, ssd_chunked_fn

    params = inspect.signature(ssd_chunked_fn).parameters
    assert len(VARIANTS) >= 3
    for name, kw in VARIANTS.items():
        assert set(kw) <= set(params), name
        assert kw["chunk_size"] in (16, 32, 64, 128, 256), name
        assert isinstance(kw.get("bwd", BwdConfig()), BwdConfig), name


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_bf16_gradients_every_variant(kernels):
    from flopkb_kernels.ssd.chunked import VARIANTS, ssd_chunked_fn

    shape = {"batch": 2, "steps": 700, "heads": 8, "headdim": 64, "groups": 1, "dstate": 128}
    args = _inputs("cuda", shape, dtype=torch.bfloat16)
    dy = torch.randn_like(args[0])
    _, want = _reference_grads(args, dy, chunked_ref=64)
    for name, kw in VARIANTS.items():
        _, grads = _kernel_grads(lambda *a, _kw=kw: ssd_chunked_fn(*a, **_kw), args, dy)
        for n, g, w in zip(NAMES, grads, want, strict=True):
            assert rel(g, w) < GRAD_BOUND[torch.bfloat16], (name, n)


def test_saved_bytes_is_what_the_autograd_function_keeps(kernels, device):
    from flopkb_kernels.ssd import cost
    from flopkb_kernels.ssd.chunked import ssd_chunked_fn

    args = [t.requires_grad_() for t in _inputs(device, SMALL | {"groups": 2})]
    y = ssd_chunked_fn(*args, chunk_size=16)
    saved = y.grad_fn.saved_tensors
    inputs = {id(t) for t in args}
    extra = sum(t.numel() * t.element_size() for t in saved if id(t) not in inputs)
    b, t, h, p, n = (SMALL[k] for k in ("batch", "steps", "heads", "headdim", "dstate"))
    g = 2
    assert extra == cost.saved_bytes(b, t, h, p, n, 16, groups=g, x_bytes=4)


def test_backward_flops_count_the_causal_pairs(kernels):
    from flopkb_kernels.ssd import cost

    b, t, h, p, n, q = 2, 37, 3, 5, 7, 16
    pairs = sum(1 for c0 in range(0, t, q) for i in range(c0, min(c0 + q, t))
                for j in range(c0, i + 1))
    chunks = -(-t // q)
    want = b * h * (4 * (p + n) * pairs + 8 * t * p * n + 4 * chunks * p * n + 4 * t * p)
    assert cost.backward_flops(b, t, h, p, n, q, has_d=True) == want
    assert cost.training_flops(b, t, h, p, n, q, has_d=True) == (
        want + cost.flops("chunked", b, t, h, p, n, q, has_d=True)
    )


# Decode step (step.py): y and the in-place state update against `mamba2_step_reference`
# (accuracy.STEP_TOL).


def _step_inputs(b: int, h: int, p: int, n: int, g: int, dtype: torch.dtype) -> dict:
    return step_inputs(dtype, state=(b, h, p, n), x=(b, h, p), dt=(b, h), A=(h,), BC=(b, g, n),
                       D=h)


def _run_step(args: dict, **kw) -> tuple:
    step, ref = load_op("ssd", "step"), load_op("ssd", "reference")
    return run_step(step.mamba2_step, ref.mamba2_step_reference, args, **kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("b", "h", "p", "n", "g"), [(3, 6, 7, 5, 3), (2, 4, 16, 16, 1)])
def test_mamba2_step_matches_reference(kernels, dtype, b, h, p, n, g):
    args = _step_inputs(b, h, p, n, g, dtype)
    assert_step_matches(_run_step(args), args, dtype)


def test_mamba2_step_groups_are_read_per_head(kernels):
    # heads 0-1 read group 0, heads 2-3 group 1: swapping the groups must change the outputs
    args = _step_inputs(1, 4, 3, 5, 2, torch.float32)
    y, y_ref, _, _ = _run_step(args)
    swapped = {**args, "Bm": args["Bm"].flip(1).contiguous(),
               "Cm": args["Cm"].flip(1).contiguous()}
    y_sw, y_sw_ref, _, _ = _run_step(swapped)
    assert rel(y, y_ref) < 1e-5
    assert rel(y_sw, y_sw_ref) < 1e-5
    assert rel(y_sw, y) > 1e-2


def test_mamba2_step_validates_inputs(kernels):
    step = load_op("ssd", "step")
    args = _step_inputs(1, 6, 3, 5, 3, torch.float32)
    with pytest.raises(ValueError, match="groups dividing heads"):
        step.mamba2_step(**{**args, "Bm": torch.randn(1, 4, 5), "Cm": torch.randn(1, 4, 5)})
    with pytest.raises(ValueError, match="block_p"):
        step.mamba2_step(**args, block_p=3)


def test_mamba2_step_cost_counts_the_state_twice(kernels):
    cost = load_op("ssd", "cost")
    state = 2 * 4 * 128 * 64 * 128
    assert state < cost.step_bytes(1, 128, 64, 128, 8) < 1.01 * state
    assert cost.step_flops(1, 128, 64, 128) == 5 * 128 * 64 * 128
