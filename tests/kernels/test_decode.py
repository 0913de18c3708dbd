"""Decode-step kernels (kernels/decode) against their PyTorch references on odd sizes.

Outputs are pre-filled with NaN (a lane the kernel never writes fails), the state is float32 and
compared after the step as well as y. Bounds: fp32 inputs 1e-5 relative L2 (the same float32
arithmetic in another order); bf16 inputs 1e-2 (y rounded to bf16 once).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kernelpkg import load_op

TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2}


@pytest.fixture(scope="module")
def dec(kernels) -> SimpleNamespace:
    ref = SimpleNamespace(
        mamba1_step_reference=load_op("selective_scan", "reference").mamba1_step_reference,
        mamba2_step_reference=load_op("ssd", "reference").mamba2_step_reference,
        decode_attention_reference=load_op("attention", "reference").decode_attention_reference)
    cost = SimpleNamespace(mamba1_bytes=load_op("selective_scan", "cost").step_bytes,
                           mamba2_bytes=load_op("ssd", "cost").step_bytes,
                           attention_bytes=load_op("attention", "cost").decode_bytes)
    return SimpleNamespace(m1=load_op("selective_scan", "step"), m2=load_op("ssd", "step"),
                           attn=load_op("attention", "step"), ref=ref, cost=cost)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    assert torch.isfinite(out).all(), "NaN or inf in the kernel's output"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def nan_like(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, float("nan"))


def mamba1_inputs(b: int, dim: int, n: int, dtype: torch.dtype) -> dict:
    return {
        "state": torch.randn(b, dim, n),
        "x": torch.randn(b, dim, dtype=dtype),
        "dt": torch.randn(b, dim, dtype=dtype) - 1.0,
        "A": -torch.rand(dim, n) - 0.1,
        "Bm": torch.randn(b, n, dtype=dtype),
        "Cm": torch.randn(b, n, dtype=dtype),
        "D": torch.randn(dim),
        "dt_bias": torch.randn(dim) * 0.5,
    }


def mamba2_inputs(b: int, h: int, p: int, n: int, g: int, dtype: torch.dtype) -> dict:
    return {
        "state": torch.randn(b, h, p, n),
        "x": torch.randn(b, h, p, dtype=dtype),
        "dt": torch.randn(b, h, dtype=dtype) - 1.0,
        "A": -torch.rand(h) - 0.1,
        "Bm": torch.randn(b, g, n, dtype=dtype),
        "Cm": torch.randn(b, g, n, dtype=dtype),
        "D": torch.randn(h),
        "dt_bias": torch.randn(h) * 0.5,
    }


def run_both(kernel, reference, args: dict, **kw) -> tuple:
    k_args = {**args, "state": args["state"].clone()}
    r_args = {**args, "state": args["state"].clone()}
    y = kernel(**k_args, out=nan_like(args["x"]), **kw)
    # block sizes are the kernel's own; every other option goes to both
    y_ref = reference(**r_args, **{k: v for k, v in kw.items() if not k.startswith("block_")})
    return y, y_ref, k_args["state"], r_args["state"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("b", "dim", "n"), [(3, 37, 5), (2, 19, 16)])
def test_mamba1_step_matches_reference(dec, dtype, b, dim, n):
    args = mamba1_inputs(b, dim, n, dtype)
    y, y_ref, st, st_ref = run_both(dec.m1.mamba1_step, dec.ref.mamba1_step_reference, args)
    assert y.dtype == dtype
    assert rel_err(y, y_ref) < TOL[dtype]
    assert rel_err(st, st_ref) < 1e-5
    # the step changed the state, so the state comparison above tests the write-back
    assert rel_err(st, args["state"]) > 1e-3


def test_mamba1_step_without_optional_inputs(dec):
    args = mamba1_inputs(2, 37, 5, torch.float32)
    del args["D"], args["dt_bias"]
    y, y_ref, st, st_ref = run_both(dec.m1.mamba1_step, dec.ref.mamba1_step_reference, args,
                                    dt_softplus=False)
    assert rel_err(y, y_ref) < 1e-5
    assert rel_err(st, st_ref) < 1e-5


def test_mamba1_step_small_block_covers_every_channel(dec):
    args = mamba1_inputs(1, 37, 5, torch.float32)
    y, y_ref, _, _ = run_both(dec.m1.mamba1_step, dec.ref.mamba1_step_reference, args, block_d=4)
    assert rel_err(y, y_ref) < 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("b", "h", "p", "n", "g"), [(3, 6, 7, 5, 3), (2, 4, 16, 16, 1)])
def test_mamba2_step_matches_reference(dec, dtype, b, h, p, n, g):
    args = mamba2_inputs(b, h, p, n, g, dtype)
    y, y_ref, st, st_ref = run_both(dec.m2.mamba2_step, dec.ref.mamba2_step_reference, args)
    assert y.dtype == dtype
    assert rel_err(y, y_ref) < TOL[dtype]
    assert rel_err(st, st_ref) < 1e-5
    assert rel_err(st, args["state"]) > 1e-3


def test_mamba2_step_groups_are_read_per_head(dec):
    # heads 0-1 read group 0, heads 2-3 group 1: swapping the groups must change the outputs
    args = mamba2_inputs(1, 4, 3, 5, 2, torch.float32)
    y, y_ref, _, _ = run_both(dec.m2.mamba2_step, dec.ref.mamba2_step_reference, args)
    swapped = {**args, "Bm": args["Bm"].flip(1).contiguous(),
               "Cm": args["Cm"].flip(1).contiguous()}
    y_sw, y_sw_ref, _, _ = run_both(dec.m2.mamba2_step, dec.ref.mamba2_step_reference, swapped)
    assert rel_err(y, y_ref) < 1e-5
    assert rel_err(y_sw, y_sw_ref) < 1e-5
    assert rel_err(y_sw, y) > 1e-2


def test_wrappers_validate_inputs(dec):
    args = mamba1_inputs(2, 7, 5, torch.float32)
    with pytest.raises(ValueError, match="state"):
        dec.m1.mamba1_step(**{**args, "state": args["state"].bfloat16()})
    with pytest.raises(ValueError, match="Bm"):
        dec.m1.mamba1_step(**{**args, "Bm": args["Bm"][:, :4].contiguous()})
    a2 = mamba2_inputs(1, 6, 3, 5, 3, torch.float32)
    with pytest.raises(ValueError, match="groups dividing heads"):
        dec.m2.mamba2_step(**{**a2, "Bm": torch.randn(1, 4, 5), "Cm": torch.randn(1, 4, 5)})
    with pytest.raises(ValueError, match="block_p"):
        dec.m2.mamba2_step(**a2, block_p=3)


@pytest.mark.parametrize(("b", "hq", "hkv", "e", "length"), [(2, 6, 2, 16, 37), (1, 3, 3, 8, 5)])
def test_decode_attention_math_matches_reference(dec, b, hq, hkv, e, length):
    q = torch.randn(b, hq, e)
    k, v = torch.randn(b, length, hkv, e), torch.randn(b, length, hkv, e)
    o = dec.attn.decode_attention(q, k, v, backend="math")
    assert rel_err(o, dec.ref.decode_attention_reference(q, k, v)) < 1e-5


def test_decode_attention_window_reads_the_last_tokens(dec):
    q, k, v = torch.randn(1, 4, 8), torch.randn(1, 29, 2, 8), torch.randn(1, 29, 2, 8)
    o = dec.attn.decode_attention(q, k, v, window=7, backend="math")
    assert rel_err(o, dec.ref.decode_attention_reference(q, k[:, -7:], v[:, -7:])) < 1e-5
    assert rel_err(o, dec.ref.decode_attention_reference(q, k, v)) > 1e-2


def test_decode_attention_refuses_bad_shapes(dec):
    with pytest.raises(ValueError, match="Hkv dividing"):
        dec.attn.decode_attention(torch.randn(1, 5, 8), torch.randn(1, 3, 2, 8),
                                  torch.randn(1, 3, 2, 8), backend="math")
    with pytest.raises(ValueError, match="flash"):
        dec.attn.decode_attention(torch.randn(1, 4, 8), torch.randn(1, 3, 2, 8),
                                  torch.randn(1, 3, 2, 8), backend="flash")


def test_costs_state_term_dominates(dec):
    # the README's example: B=16, DIM=4096, N=16, bf16 activations; state 8.4 MB of 9.1 MB
    total = dec.cost.mamba1_bytes(16, 4096, 16)
    assert total == 9077760
    assert 0.9 < 2 * 4 * 16 * 4096 * 16 / total < 0.95
    assert dec.cost.mamba2_bytes(1, 128, 64, 128, 8) > 2 * 4 * 128 * 64 * 128
    kv, q_and_o = 2 * 1000 * 8 * 128 * 2, 2 * 32 * 128 * 2
    assert dec.cost.attention_bytes(1, 32, 8, 128, 1000) == kv + q_and_o
