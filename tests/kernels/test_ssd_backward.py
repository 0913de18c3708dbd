"""Chunked SSD backward (Triton) vs torch.autograd through the PyTorch references.

Every gradient (x, dt, A, B, C, D) is compared by ||g - g_ref|| / ||g_ref|| against autograd
through `ssd_reference` in float64 on the same (rounded) inputs. Bounds: fp32 inputs 5e-5 (the
kernels run fp32 IEEE dots; dA is one sum per head over all steps whose terms cancel, which costs
a few units of 1e-6 at these sizes), bf16 inputs 3e-2 (as the forward: tensor-core operands in
bf16, bf16 dx, dB, dC). Every buffer the backward allocates is NaN-filled first, so an element no
kernel writes, or one read before it is written, shows as NaN.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from ssd_inputs import SHAPE, rel, ssd_inputs

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
