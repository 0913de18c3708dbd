"""Sliding-window attention prefill (kernels/attention/window.py) against the fp32 reference.

Runs through TRITON_INTERPRET=1 on the CPU (tests/kernels/conftest.py sets it). Odd T, windows
below and above T and off the block size, GQA 6/2 and plain 4/4, block shapes with BLOCK_M !=
BLOCK_N, outputs NaN-filled first so a row the kernel never writes fails. Bounds (relative
Frobenius error): 1e-5 on fp32 inputs (exact IEEE dots), 2e-2 on bf16 (q, k, v, p and o rounded
to bf16).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from accuracy import rel_err
from op_modules import op_modules, requires_cuda

BOUND = {torch.float32: 1e-5, torch.bfloat16: 2e-2}


@pytest.fixture(scope="module")
def attn(kernels) -> SimpleNamespace:
    return op_modules("attention", "window", "reference", "cost")


def inputs(B: int, T: int, Hq: int, Hkv: int, D: int, dtype: torch.dtype, device):
    q = torch.randn(B, T, Hq, D, device=device).to(dtype)
    k = torch.randn(B, T, Hkv, D, device=device).to(dtype)
    v = torch.randn(B, T, Hkv, D, device=device).to(dtype)
    return q, k, v


@pytest.mark.parametrize(
    ("B", "T", "Hq", "Hkv", "D", "window", "blocks", "dtype"),
    [
        (2, 77, 6, 2, 16, 20, (16, 16), torch.float32),     # window < block pair, GQA
        (1, 130, 4, 4, 32, 37, (32, 16), torch.float32),    # BLOCK_M > BLOCK_N, no GQA
        (1, 130, 6, 2, 16, 33, (16, 32), torch.bfloat16),   # BLOCK_N > BLOCK_M, bf16
        (1, 130, 6, 2, 16, 200, (16, 16), torch.bfloat16),  # window > T: full causal
        (1, 77, 4, 4, 24, 48, (16, 16), torch.float32),     # D = 24: padded head dim
        (1, 61, 6, 2, 16, 1, (16, 16), torch.float32),      # window 1: each query sees itself
    ],
)
def test_matches_reference(attn, device, B, T, Hq, Hkv, D, window, blocks, dtype):
    q, k, v = inputs(B, T, Hq, Hkv, D, dtype, device)
    out = torch.full_like(q, float("nan"))
    o = attn.window.window_attention(q, k, v, window=window, out=out, blocks=blocks)
    assert o is out
    assert not torch.isnan(o).any()
    ref = attn.reference.window_attention_reference(q, k, v, window=window)
    assert rel_err(o, ref) < BOUND[dtype]


def test_autotuned_path_and_full_causal(attn, device):
    # window=None through the autotuned launcher equals the causal reference of attention/
    q, k, v = inputs(1, 53, 4, 4, 16, torch.float32, device)
    o = attn.window.window_attention(q, k, v, window=None)
    full = attn.reference.causal_attention_reference(q, k, v)
    assert rel_err(o, full) < 1e-5
    # and a window of T or more is the same computation
    assert rel_err(attn.window.window_attention(q, k, v, window=53), full) < 1e-5


def test_window_one_is_value(attn, device):
    # with W = 1 each query attends to its own key only: o = v of its KV head, exactly
    q, k, v = inputs(1, 45, 6, 2, 16, torch.float32, device)
    o = attn.window.window_attention(q, k, v, window=1, blocks=(16, 16))
    assert torch.equal(o, v.repeat_interleave(3, dim=2))


# the interpreter's numpy max over the poisoned rows warns "All-NaN slice": that is the point
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_skips_blocks_outside_the_window(attn, device):
    # Poison k, v at positions [0, 16). With W = 20 and 16 x 16 blocks, the query block starting
    # at m0 walks key blocks from floor((m0 - 19) / 16) * 16, which is >= 16 once m0 >= 48: those
    # rows must come out finite and exact. A kernel that loaded every causal block (masking
    # instead of skipping) would turn them NaN (p = 0 times v = NaN is NaN).
    T, W = 130, 20
    q, k, v = inputs(1, T, 6, 2, 16, torch.float32, device)
    ref = attn.reference.window_attention_reference(q, k, v, window=W)
    k[:, :16] = float("nan")
    v[:, :16] = float("nan")
    o = attn.window.window_attention(q, k, v, window=W, blocks=(16, 16))
    assert not torch.isnan(o[:, 48:]).any()
    assert rel_err(o[:, 48:], ref[:, 48:]) < 1e-5
    # rows whose window holds a poisoned key are NaN: the poison did reach the kernel
    assert torch.isnan(o[:, :16]).all()


def test_strided_views_of_a_fused_qkv(attn, device):
    # q, k, v as views of one [B, T, Hq + 2 Hkv, D] projection output: no copy needed
    B, T, Hq, Hkv, D = 2, 41, 6, 2, 16
    qkv = torch.randn(B, T, Hq + 2 * Hkv, D, device=device)
    q, k, v = qkv.split([Hq, Hkv, Hkv], dim=2)
    assert not q.is_contiguous()
    o = attn.window.window_attention(q, k, v, window=13, blocks=(16, 16))
    ref = attn.reference.window_attention_reference(q, k, v, window=13)
    assert rel_err(o, ref) < 1e-5


def test_scale(attn, device):
    q, k, v = inputs(1, 29, 4, 2, 16, torch.float32, device)
    o = attn.window.window_attention(q, k, v, window=9, scale=0.3, blocks=(16, 16))
    ref = attn.reference.window_attention_reference(q, k, v, window=9, scale=0.3)
    assert rel_err(o, ref) < 1e-5


OK_SHAPES = ((1, 8, 4, 16), (1, 8, 2, 16), (1, 8, 2, 16))
BAD_SHAPES = [
    (((1, 8, 16), (1, 8, 2, 16), (1, 8, 2, 16)), {}, r"q of shape \[B, T, Hq, D\]"),
    (((1, 8, 4, 16), (1, 9, 2, 16), (1, 9, 2, 16)), {}, "k and v of shape"),
    (((1, 8, 4, 16), (1, 8, 3, 16), (1, 8, 3, 16)), {}, "Hkv dividing Hq"),
    (((1, 8, 4, 16), (1, 8, 2, 16), (1, 8, 2, 8)), {}, "k and v of shape"),
    (((1, 8, 4, 300), (1, 8, 2, 300), (1, 8, 2, 300)), {}, "D <= 256"),
    (((1, 0, 4, 16), (1, 0, 2, 16), (1, 0, 2, 16)), {}, "T, Hq >= 1"),
    (OK_SHAPES, {"window": 0}, "window an int >= 1"),
]


@pytest.mark.parametrize(("shapes", "kwargs", "message"), BAD_SHAPES)
def test_rejects_bad_shapes(attn, device, shapes, kwargs, message):
    q, k, v = (torch.zeros(s, device=device) for s in shapes)
    with pytest.raises(ValueError, match=message):
        attn.window.window_attention(q, k, v, **({"window": 4} | kwargs))


def test_rejects_bad_dtype_layout_and_out(attn, device):
    q, k, v = inputs(1, 8, 4, 2, 16, torch.float32, device)
    with pytest.raises(ValueError, match="one dtype"):
        attn.window.window_attention(q, k.bfloat16(), v, window=4)
    with pytest.raises(ValueError, match="one dtype"):
        attn.window.window_attention(q.double(), k.double(), v.double(), window=4)
    with pytest.raises(ValueError, match="contiguous last dimension"):
        attn.window.window_attention(q.transpose(1, 3).contiguous().transpose(1, 3), k, v,
                                     window=4)
    with pytest.raises(ValueError, match="expected out"):
        attn.window.window_attention(q, k, v, window=4, out=torch.empty(1, 8, 4, 8))
    with pytest.raises(ValueError, match="expected blocks"):
        attn.window.window_attention(q, k, v, window=4, blocks=(24, 16))
    with pytest.raises(ValueError, match="window an int"):
        attn.window.window_attention(q, k, v, window=2.5)
    # the kernel folds the scale into the row max, which needs scale > 0
    with pytest.raises(ValueError, match="scale a finite number > 0"):
        attn.window.window_attention(q, k, v, window=4, scale=0.0)


def test_costs(attn):
    cost = attn.cost
    # pairs = sum_t min(t + 1, W): check the closed form against the direct sum
    for t, w in ((77, 20), (130, 200), (130, 130), (5, 1), (2048 * 3 + 7, 2048)):
        assert cost.window_pairs(t, w) == sum(min(i + 1, w) for i in range(t))
    assert cost.window_pairs(130, None) == 130 * 131 // 2
    # Samba's layer at 128K: 4 T W D Hq up to the W^2/2 corner; bytes q, o (Hq) and k, v (Hkv)
    t, w = 131072, 2048
    assert cost.window_flops(1, t, 32, 64, window=w) == 4 * 32 * 64 * (w * (w + 1) // 2
                                                                        + (t - w) * w)
    assert cost.window_bytes(1, t, 32, 4, 64) == 2 * t * 36 * 64 * 2


@pytest.mark.slow
def test_bench_cpu_smoke(tmp_path):
    # the GPU benchmark's plumbing, peers' masks and checks, through the interpreter (no timing)
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "smoke.json"
    env = os.environ | {"PYTHONPATH": str(root), "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, str(root / "bench" / "kernels_attention_window.py"),
                          "--cpu-smoke", "--out", str(out)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["errors"] == {}
    checked = {(r["section"], r["impl"]) for r in result["rows"]
               if r["check"]["rel_err"] is not None and r["check"]["rel_err"] < 2e-2}
    assert {("prefill", "triton_window"), ("prefill", "flex_window"),
            ("prefill", "sdpa_chunked_mask"), ("decode", "triton_split_kv")} <= checked


@pytest.mark.gpu
@requires_cuda
def test_samba_shape_on_gpu(attn):
    # one batch row at Samba's heads (32 q / 4 kv x 64) and window 2048, T = 5000 (not a block
    # multiple), bf16 through the autotuned compiled kernel
    q, k, v = inputs(1, 5000, 32, 4, 64, torch.bfloat16, "cuda")
    o = attn.window.window_attention(q, k, v, window=2048)
    sl = slice(0, 4)  # query heads of KV head 0
    ref = attn.reference.window_attention_reference(q[:, :, sl], k[:, :, :1], v[:, :, :1],
                                                    window=2048)
    assert rel_err(o[:, :, sl], ref) < 2e-2
