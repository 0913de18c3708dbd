"""Attention (kernels/attention) against the fp32 math reference: causal SDPA in the [B, T, H, D]
layout, the windowed (sliding) SDPA form, and the one-token decode step over a KV cache.

Bounds: the math backend on fp32 inputs agrees with the einsum reference to 1e-5 (relative
Frobenius); flash on bf16 inputs (GPU only) to 2e-2 (bf16 rounding of q, k, v, p and o).
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
import torch
from accuracy import rel_err
from op_modules import op_modules, requires_cuda

from flopkb.kernelpkg import load_op


@pytest.fixture(scope="module")
def attn(kernels) -> SimpleNamespace:
    return op_modules("attention", "sdpa", "reference", "cost")


def qkv(B: int, T: int, H: int, D: int, dtype=torch.float32, device="cpu"):
    return [torch.randn(B, T, H, D, dtype=dtype, device=device) for _ in range(3)]


@pytest.mark.parametrize(("B", "T", "H", "D"), [(2, 37, 3, 16), (1, 5, 1, 8)])
def test_math_backend_matches_reference(attn, B, T, H, D):
    q, k, v = qkv(B, T, H, D)
    o = attn.sdpa.causal_attention(q, k, v, backend="math")
    assert o.shape == (B, T, H, D)
    assert rel_err(o, attn.reference.causal_attention_reference(q, k, v)) < 1e-5


def test_causality(attn):
    # changing the last position's k and v must leave every earlier output unchanged
    q, k, v = qkv(1, 9, 2, 8)
    o1 = attn.sdpa.causal_attention(q, k, v, backend="math")
    k2, v2 = k.clone(), v.clone()
    k2[:, -1] += 1.0
    v2[:, -1] -= 1.0
    o2 = attn.sdpa.causal_attention(q, k2, v2, backend="math")
    assert torch.equal(o1[:, :-1], o2[:, :-1])
    assert not torch.equal(o1[:, -1], o2[:, -1])


def test_backend_report_on_cpu(attn):
    q, k, v = qkv(1, 7, 2, 8)
    assert attn.sdpa.attention_backend(q, k, v, backend="math") == "math"


def test_flash_refused_on_cpu(attn):
    q, k, v = qkv(1, 7, 2, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="expected CUDA tensors"):
        attn.sdpa.causal_attention(q, k, v, backend="flash")


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((1, 4, 2, 8), (1, 4, 2, 8), (1, 5, 2, 8)), "one shape"),
        (((1, 4, 8), (1, 4, 8), (1, 4, 8)), r"\[B, T, H, D\]"),
    ],
)
def test_rejects_bad_shapes(attn, shapes, message):
    q, k, v = (torch.zeros(s) for s in shapes)
    with pytest.raises(ValueError, match=message):
        attn.sdpa.causal_attention(q, k, v, backend="math")


def test_rejects_unknown_backend(attn):
    q, k, v = qkv(1, 4, 1, 8)
    with pytest.raises(ValueError, match="expected backend"):
        attn.sdpa.causal_attention(q, k, v, backend="fa3")


def test_cost(attn):
    assert attn.cost.flops(1, 3, 1, 2) == 4 * 2 * 6
    assert attn.cost.flops(1, 3, 1, 2, causal=False) == 4 * 2 * 9
    assert attn.cost.bytes_moved(2, 3, 4, 5) == 4 * 120 * 2


@pytest.mark.gpu
@requires_cuda
def test_flash_runs_and_matches_reference(attn):
    q, k, v = qkv(2, 257, 4, 64, dtype=torch.bfloat16, device="cuda")
    assert attn.sdpa.attention_backend(q, k, v, backend="flash") == "flash"
    o = attn.sdpa.causal_attention(q, k, v, backend="flash")
    assert rel_err(o, attn.reference.causal_attention_reference(q, k, v)) < 2e-2


@pytest.mark.gpu
@requires_cuda
def test_flash_raises_when_it_cannot_run(attn):
    # head dimension 300 is over FlashAttention-2's limit of 256: forced flash must raise
    q, k, v = qkv(1, 16, 1, 300, dtype=torch.bfloat16, device="cuda")
    # SDPA explains its refusal in UserWarnings before raising; the raise is what is tested
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="cannot run"):
        warnings.simplefilter("ignore")
        attn.sdpa.causal_attention(q, k, v, backend="flash")


@pytest.mark.parametrize("window", [1, 5, 23, 40])
def test_windowed_attention_matches_the_dense_masked_reference(attn, window: int) -> None:
    # L = 23 is no multiple of the windows: the last query block is padded
    win = load_op("attention", "window_sdpa")
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 23, s, 8, generator=g) for s in (4, 2, 2))
    out = win.windowed_attention(q, k, v, window, backend="math")
    ref = attn.reference.windowed_attention_reference(q, k, v, window)
    assert torch.allclose(out, ref, atol=1e-5)
    if window < 23:
        full = attn.reference.windowed_attention_reference(q, k, v, 23)
        assert not torch.allclose(out, full, atol=1e-3)


def test_windowed_attention_refuses_bad_arguments() -> None:
    win = load_op("attention", "window_sdpa")
    q = torch.randn(1, 4, 2, 8)
    with pytest.raises(ValueError, match="window >= 1"):
        win.windowed_attention(q, q, q, 0, backend="math")
    with pytest.raises(ValueError, match="backend"):
        win.windowed_attention(q, q, q, 2, backend="flash")


@pytest.mark.parametrize(("b", "hq", "hkv", "e", "length"), [(2, 6, 2, 16, 37), (1, 3, 3, 8, 5)])
def test_decode_attention_math_matches_reference(attn, b, hq, hkv, e, length):
    q = torch.randn(b, hq, e)
    k, v = torch.randn(b, length, hkv, e), torch.randn(b, length, hkv, e)
    o = load_op("attention", "step").decode_attention(q, k, v, backend="math")
    assert rel_err(o, attn.reference.decode_attention_reference(q, k, v)) < 1e-5


def test_decode_attention_window_reads_the_last_tokens(attn):
    q, k, v = torch.randn(1, 4, 8), torch.randn(1, 29, 2, 8), torch.randn(1, 29, 2, 8)
    o = load_op("attention", "step").decode_attention(q, k, v, window=7, backend="math")
    ref = attn.reference.decode_attention_reference
    assert rel_err(o, ref(q, k[:, -7:], v[:, -7:])) < 1e-5
    assert rel_err(o, ref(q, k, v)) > 1e-2


def test_decode_attention_refuses_bad_shapes(kernels):
    step = load_op("attention", "step")
    with pytest.raises(ValueError, match="Hkv dividing"):
        step.decode_attention(torch.randn(1, 5, 8), torch.randn(1, 3, 2, 8),
                              torch.randn(1, 3, 2, 8), backend="math")
    with pytest.raises(ValueError, match="flash"):
        step.decode_attention(torch.randn(1, 4, 8), torch.randn(1, 3, 2, 8),
                              torch.randn(1, 3, 2, 8), backend="flash")


def test_decode_cost_reads_the_cache_once(attn):
    kv, q_and_o = 2 * 1000 * 8 * 128 * 2, 2 * 32 * 128 * 2
    assert attn.cost.decode_bytes(1, 32, 8, 128, 1000) == kv + q_and_o
    assert attn.cost.decode_flops(1, 32, 128, 1000) == 4 * 32 * 128 * 1000
