"""Split-KV decode (kernels/attention/split_kv.py) against the fp32 reference.

Through TRITON_INTERPRET=1 on the CPU: several split counts, lengths that are not multiples of
the chunk, a length shorter than one chunk (empty chunks), length 0 and lengths past the cache,
windows below and above the length, GQA 6/2 and plain 4/4; cache slots outside the attended span
poisoned with NaN and outputs NaN-filled first. Bounds: max abs error 1e-5 on fp32 inputs, 2e-2
relative Frobenius on bf16 (p and o rounded to bf16).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from accuracy import rel_err
from op_modules import op_modules, requires_cuda


@pytest.fixture(scope="module")
def ops(kernels) -> SimpleNamespace:
    return op_modules("attention", "split_kv", "window", "reference", "cost")


def cache(B: int, L: int, Hq: int, Hkv: int, D: int, dtype: torch.dtype, device):
    q = torch.randn(B, Hq, D, device=device).to(dtype)
    k = torch.randn(B, L, Hkv, D, device=device).to(dtype)
    v = torch.randn(B, L, Hkv, D, device=device).to(dtype)
    return q, k, v


def poison_outside(k: torch.Tensor, v: torch.Tensor, lengths: list[int], window: int | None):
    """NaN in every cache slot the step must not read: at or past the length, before the window."""
    for b, n in enumerate(lengths):
        n = min(n, k.shape[1])
        lo = 0 if window is None else max(0, n - window)
        for t in (k, v):
            t[b, n:] = float("nan")
            t[b, :lo] = float("nan")


@pytest.mark.parametrize(
    ("B", "Hq", "Hkv", "D", "L", "lengths", "window", "splits", "dtype"),
    [
        (3, 6, 2, 16, 100, [100, 37, 5], None, 1, torch.float32),   # one split: no combine
        (3, 6, 2, 16, 100, [100, 37, 5], None, 3, torch.float32),   # 5 < one chunk
        (3, 6, 2, 16, 100, [100, 37, 5], 20, 4, torch.float32),     # window < length
        (2, 4, 4, 32, 70, [70, 43], 150, 5, torch.float32),         # window > length
        (2, 4, 4, 24, 70, [61, 17], 33, 2, torch.float32),          # D = 24 padded
        (2, 6, 2, 16, 90, [90, 51], None, 7, torch.bfloat16),       # bf16, 7 splits
        (1, 8, 1, 16, 50, [49], 16, 3, torch.bfloat16),             # MQA group of 8
    ],
)
def test_matches_reference(ops, device, B, Hq, Hkv, D, L, lengths, window, splits, dtype):
    q, k, v = cache(B, L, Hq, Hkv, D, dtype, device)
    lens = torch.tensor(lengths, dtype=torch.int32, device=device)
    ref = ops.reference.split_kv_decode_reference(q, k, v, lens, window=window)
    poison_outside(k, v, lengths, window)
    out = torch.full_like(q, float("nan"))
    o = ops.split_kv.split_kv_decode(q, k, v, lens, window=window, out=out, num_splits=splits,
                                     block_n=16)
    assert o is out
    assert not torch.isnan(o).any()
    if dtype == torch.float32:
        assert (o - ref).abs().max().item() < 1e-5
    else:
        assert rel_err(o, ref) < 2e-2


@pytest.mark.parametrize("splits", [1, 4])
def test_zero_and_overlong_lengths(ops, device, splits):
    # length 0 gives o = 0; a length past the cache is clamped to L (never reads past it)
    q, k, v = cache(3, 40, 4, 2, 16, torch.float32, device)
    lens = torch.tensor([0, 40, 1000], dtype=torch.int64, device=device)
    o = ops.split_kv.split_kv_decode(q, k, v, lens, num_splits=splits, block_n=16)
    assert torch.equal(o[0], torch.zeros_like(o[0]))
    full = ops.reference.split_kv_decode_reference(q, k, v, None)
    assert (o[1:] - full[1:]).abs().max().item() < 1e-5


def test_lengths_none_is_full_cache(ops, device):
    q, k, v = cache(2, 45, 6, 2, 16, torch.float32, device)
    lens = torch.full((2,), 45, dtype=torch.int32, device=device)
    a = ops.split_kv.split_kv_decode(q, k, v, None, num_splits=3, block_n=16)
    b = ops.split_kv.split_kv_decode(q, k, v, lens, num_splits=3, block_n=16)
    assert torch.equal(a, b)
    assert (a - ops.reference.split_kv_decode_reference(q, k, v)).abs().max().item() < 1e-5


def test_split_count_does_not_change_the_result(ops, device):
    q, k, v = cache(2, 77, 6, 2, 16, torch.float32, device)
    lens = torch.tensor([77, 30], dtype=torch.int32, device=device)
    outs = [ops.split_kv.split_kv_decode(q, k, v, lens, window=50, num_splits=s, block_n=16)
            for s in (1, 2, 5)]
    for o in outs[1:]:
        assert (o - outs[0]).abs().max().item() < 1e-5


def test_auto_splits(ops, device):
    sk = ops.split_kv
    q, k, _ = cache(2, 100, 6, 2, 16, torch.float32, device)
    s = sk.splits_for(q, k)
    assert 1 <= s <= sk.MAX_SPLITS
    # H200 shapes: B=1, Hkv=8 at 512K fills 8 programs per SM (132 SMs); a 2048-token window
    # at B=8, Hkv=4 is cut no finer than MIN_BLOCKS_PER_SPLIT blocks of 128 keys
    assert sk.auto_splits(1, 8, 2**19, 64, 132) == 132
    assert sk.auto_splits(8, 4, 2048, 128, 132) == 2048 // 128 // sk.MIN_BLOCKS_PER_SPLIT
    assert sk.auto_splits(16, 8, 64, 64, 132) == 1
    assert sk.auto_splits(1, 1, 0, 64, 132) == 1


def test_window_step_is_the_last_prefill_row(ops, device):
    # the decode step over the window equals the last row of the windowed prefill
    B, T, Hq, Hkv, D, W = 2, 83, 6, 2, 16, 29
    q = torch.randn(B, T, Hq, D, device=device)
    k = torch.randn(B, T, Hkv, D, device=device)
    v = torch.randn(B, T, Hkv, D, device=device)
    prefill = ops.window.window_attention(q, k, v, window=W, blocks=(16, 16))
    lens = torch.full((B,), T, dtype=torch.int32, device=device)
    step = ops.window.window_decode_step(q[:, -1], k, v, lens, window=W, num_splits=2)
    assert (step - prefill[:, -1]).abs().max().item() < 1e-5


def test_ring_buffer_window_cache(ops, device):
    # a cache of capacity W holding token p at slot p mod W: window=None, lengths = min(n, W)
    W, n, D = 24, 61, 16
    k = torch.randn(1, n, 2, D, device=device)
    v = torch.randn(1, n, 2, D, device=device)
    q = torch.randn(1, 4, D, device=device)
    ring_k, ring_v = torch.empty(1, W, 2, D, device=device), torch.empty(1, W, 2, D, device=device)
    for p in range(n):
        ring_k[:, p % W], ring_v[:, p % W] = k[:, p], v[:, p]
    lens = torch.tensor([min(n, W)], dtype=torch.int32, device=device)
    o = ops.split_kv.split_kv_decode(q, ring_k, ring_v, lens, num_splits=2, block_n=16)
    ref = ops.reference.split_kv_decode_reference(q, k, v, None, window=W)
    assert (o - ref).abs().max().item() < 1e-5


def test_rejects_bad_arguments(ops, device):
    sk = ops.split_kv.split_kv_decode
    q, k, v = cache(2, 10, 4, 2, 16, torch.float32, device)
    lens = torch.tensor([10, 3], dtype=torch.int32, device=device)
    cases = [
        ((q[0], k, v, lens), {}, r"q of shape \[B, Hq, D\]"),
        ((q, k[0], v, lens), {}, r"k_cache of shape \[B, L, Hkv, D\]"),
        ((q, k, v[:, :5], lens), {}, "one shape"),
        ((q, k[:, :, :1].expand(2, 10, 3, 16), v[:, :, :1].expand(2, 10, 3, 16), lens), {},
         "Hkv dividing"),
        ((q[:1], k, v, lens), {}, "caches"),
        ((q, k.bfloat16(), v, lens), {}, "one dtype"),
        ((q, k, v, lens.float()), {}, "lengths of shape"),
        ((q, k, v, lens[:1]), {}, "lengths of shape"),
        ((q, k, v, lens), {"window": 0}, "window an int"),
        ((q, k, v, lens), {"num_splits": 0}, "num_splits"),
        ((q, k, v, lens), {"num_splits": 1000}, "num_splits"),
        ((q, k, v, lens), {"block_n": 48}, "block_n"),
        ((q, k, v, lens), {"scale": -0.5}, "scale a finite number > 0"),
        ((q, k, v, lens), {"out": torch.empty(2, 4, 8)}, "expected out"),
        ((q.transpose(1, 2).contiguous().transpose(1, 2), k, v, lens), {},
         "contiguous last dimension"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            sk(*args, **kwargs)
    with pytest.raises(ValueError, match="window an int >= 1"):
        ops.window.window_decode_step(q, k, v, lens, window=None)


def test_costs(ops):
    cost = ops.cost
    assert cost.decode_attended(4096, None) == 4096
    assert cost.decode_attended(65536, 2048) == 2048
    assert cost.decode_attended(100, 2048) == 100
    # Llama/Nemotron-H 8B GQA at 64K, B = 8: K and V of 8 heads x 128, bf16
    assert cost.split_kv_decode_bytes(8, 32, 8, 128, 65536) == (2 * 8 * 65536 * 8 * 128 * 2
                                                                + 2 * 8 * 32 * 128 * 2)
    assert cost.split_kv_decode_flops(1, 32, 64, 65536, window=2048) == 4 * 32 * 64 * 2048


@pytest.mark.gpu
@requires_cuda
def test_graph_capture_replays_with_new_lengths(ops):
    # capture once with one set of lengths, change them on the device, replay: the output follows
    q, k, v = cache(4, 70000, 32, 8, 128, torch.bfloat16, "cuda")
    lens = torch.tensor([70000, 4096, 1, 33333], dtype=torch.int32, device="cuda")
    out = torch.empty_like(q)
    ops.split_kv.split_kv_decode(q, k, v, lens, out=out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ops.split_kv.split_kv_decode(q, k, v, lens, out=out)
    lens.copy_(torch.tensor([12345, 70000, 2048, 7], dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    rows = slice(0, 8)  # query heads of KV heads 0 and 1
    ref = ops.reference.split_kv_decode_reference(q[:, rows], k[:, :, :2], v[:, :, :2], lens)
    assert rel_err(out[:, rows], ref) < 2e-2
