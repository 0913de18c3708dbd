"""MoE decode (kernels/moe) against the per-token float32 reference, on odd sizes.

Through TRITON_INTERPRET=1 on the CPU (tests/kernels/conftest.py). Outputs are NaN-filled first.
Bounds: fp32 inputs 1e-5 relative L2; bf16 2e-2 (h rounded to bf16 between the GEMMs, y once).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from accuracy import rel_err
from op_modules import op_modules

TOL = {torch.float32: 1e-5, torch.bfloat16: 2e-2}
CPU = torch.device("cpu")
# odd sizes; E = 7 experts, top-2, T = 5 tokens
ODD = {"d_model": 40, "experts": 7, "top_k": 2, "ffn": 24}
# expert 3 and 4 get no token; token 4 picks 0 and 1 (expert 1 has one row)
IDS = [[0, 2], [2, 5], [5, 0], [6, 2], [0, 1]]


@pytest.fixture(scope="module")
def moe(kernels) -> SimpleNamespace:
    return op_modules("moe", "cost", "bench", fwd="forward", ref="reference")


def inputs(moe, tokens: int, dtype: torch.dtype, shared: int, ids=None, seed: int = 0,
           **dims) -> dict:
    dims = {**ODD, **dims}
    args = {**moe.bench.make_weights(device=CPU, dtype=dtype, shared=shared, seed=seed, **dims),
            **moe.bench.make_routing(tokens, device=CPU, dtype=dtype, seed=seed + 1, **dims)}
    if ids is not None:
        args["expert_ids"] = torch.tensor(ids, dtype=torch.int64)
    return args


def run(moe, args: dict, **kw) -> torch.Tensor:
    out = torch.full(args["x"].shape, math.nan, dtype=args["x"].dtype)
    y = moe.fwd.moe_forward(**args, out=out, **kw)
    assert y is out
    return y


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shared", [0, 1, 2])
def test_forward_matches_reference(moe, dtype, shared):
    args = inputs(moe, 5, dtype, shared, ids=IDS)
    y = run(moe, args)
    assert y.dtype == dtype
    assert rel_err(y, moe.ref.moe_reference(**args)) < TOL[dtype]


def test_slot_with_more_rows_than_block_m(moe):
    # 37 tokens over 3 experts, top-2: every expert gets > 16 rows, so BLOCK_M = 16 loops
    args = inputs(moe, 37, torch.float32, 1, experts=3, d_model=20, ffn=12)
    cfg = moe.fwd.MoEConfig(block_m=16, block_n_up=16, block_n_down=16, block_k=16)
    assert rel_err(run(moe, args, config=cfg), moe.ref.moe_reference(**args)) < TOL[torch.float32]


@pytest.mark.parametrize("tokens", [1, 64])
def test_kimi_like_routing_many_experts(moe, tokens):
    # E = 64 experts, top-8 (Kimi's ratio, smaller): several route programs at T = 64
    args = inputs(moe, tokens, torch.bfloat16, 1, experts=64, top_k=8, d_model=48, ffn=32)
    assert rel_err(run(moe, args), moe.ref.moe_reference(**args)) < TOL[torch.bfloat16]


def test_route_sorts_pairs_stably_by_expert(moe):
    torch.manual_seed(3)
    tokens, top_k, experts = 40, 8, 100  # 320 pairs: 5 route programs of 64
    ids = torch.randint(0, experts, (tokens, top_k), dtype=torch.int32)
    r = moe.fwd.route(ids, experts, shared=1)
    flat = ids.flatten().long()
    order = torch.argsort(flat, stable=True)
    assert torch.equal(r.pair_row.long()[order], torch.arange(flat.numel()))
    assert torch.equal(r.row_token[: flat.numel()].long(), order // top_k)
    assert torch.equal(r.row_token[flat.numel():].long(), torch.arange(tokens))
    active = torch.unique(flat)
    n = int(r.num_active[0])
    assert n == active.numel()
    assert torch.equal(r.slot_expert[:n].long(), active)
    counts = torch.bincount(flat, minlength=experts)[active]
    assert torch.equal(r.slot_count[:n].long(), counts)
    assert torch.equal(r.slot_start[:n].long(), torch.cumsum(counts, 0) - counts)


def test_ids_outside_the_experts_are_dropped(moe):
    ids = [[0, -1], [7, 2], [2**40, 5], [6, 2], [0, 1]]
    args = inputs(moe, 5, torch.float32, 1, ids=ids)
    y = run(moe, args)
    assert rel_err(y, moe.ref.moe_reference(**args)) < TOL[torch.float32]
    r = moe.fwd.route(args["expert_ids"], ODD["experts"])
    assert r.pair_row.view(5, 2)[:, 0].tolist()[2] == -1
    assert (r.pair_row.view(5, 2) == -1).sum().item() == 3


def test_no_valid_choice_leaves_only_the_shared_expert(moe):
    args = inputs(moe, 3, torch.float32, 1, ids=[[-1, 9], [9, 9], [-3, 7]])
    y = run(moe, args)
    shared = moe.ref.swiglu_mlp(args["x"], args["shared_w13"][0], args["shared_w2"][0])
    assert rel_err(y, shared) < TOL[torch.float32]


def test_a_repeated_choice_counts_twice(moe):
    # ids are distinct per token in real routers; a repeat is taken literally, as the reference
    args = inputs(moe, 2, torch.float32, 0, ids=[[3, 3], [1, 3]])
    assert rel_err(run(moe, args), moe.ref.moe_reference(**args)) < TOL[torch.float32]


@pytest.mark.parametrize("name", ["hf_loop", "torch_grouped_mm", "dense_active"])
def test_peers_match_reference(moe, name):
    peer, _ = moe.bench.PEERS[name]
    if name == "torch_grouped_mm" and not moe.bench.grouped_mm_available():
        pytest.skip("torch has no _grouped_mm")
    args = inputs(moe, 5, torch.bfloat16, 1, ids=IDS, d_model=48, ffn=32)
    assert rel_err(peer(**args), moe.ref.moe_reference(**args)) < TOL[torch.bfloat16]


def test_grouped_fp32_check_equals_reference(moe):
    args = inputs(moe, 5, torch.float32, 2, ids=[[0, -1], [7, 2], [5, 5], [6, 2], [0, 1]])
    assert rel_err(moe.bench.moe_grouped_fp32(**args), moe.ref.moe_reference(**args)) < 1e-6


def test_wrapper_rejects_bad_arguments(moe, monkeypatch):
    args = inputs(moe, 5, torch.float32, 1, ids=IDS)
    f = moe.fwd.moe_forward
    cases = {
        "x of shape": {**args, "x": args["x"][None]},
        "expert_ids of dtype int32, int64": {**args, "expert_ids": args["expert_ids"].float()},
        "expert_ids of shape": {**args, "expert_ids": args["expert_ids"][:3]},
        "expert_weights of shape": {**args, "expert_weights": args["expert_weights"][:, :1]},
        "w13 of dtype float32": {**args, "w13": args["w13"].half()},
        "w13 of shape": {**args, "w13": args["w13"][..., :-1].contiguous()},
        "w13 to be contiguous": {**args, "w13": args["w13"].transpose(0, 1).contiguous()
                                 .transpose(0, 1)},
        "w2 of shape": {**args, "w2": args["w2"][:, :, :-1].contiguous()},
        "shared_w2 of shape": {**args, "shared_w2": args["shared_w2"][:, :-1].contiguous()},
        "shared_w13 and shared_w2 both": {**args, "shared_w2": None},
        "w13 of shape \\[E, 2F, D\\] with an even": {**args, "w13": args["w13"][:, :-1]
                                                    .contiguous()},
    }
    for message, bad in cases.items():
        with pytest.raises(ValueError, match=f"expected {message}"):
            f(**bad)
    with pytest.raises(ValueError, match="expected out of shape"):
        f(**args, out=torch.empty(5, 7))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="expected CUDA tensors"):
        f(**args)


def test_cost_counts(moe):
    c = moe.cost
    kimi = moe.bench.KIMI
    per_expert = 3 * 2304 * 1024 * 2
    assert c.expert_bytes(2304, 1024) == per_expert
    # issue 24: Kimi at batch 1 reads 9 experts (8 routed + 1 shared), ~0.03 ms at 4.3 TB/s
    b1 = c.nbytes(1, 8, 2304, 1024, c.expected_active(256, 1, 8), shared=1)
    assert b1 == 9 * per_expert + 2 * 2304 * 2 + 8 * 8
    assert 0.028 < b1 / 4.3e12 * 1e3 < 0.031
    assert c.expected_active(8, 64, 2) == pytest.approx(8.0, abs=1e-6)
    assert c.expected_active(kimi["experts"], 64, 8) == pytest.approx(
        256 * (1 - (1 - 8 / 256) ** 64))
    assert c.active_experts(torch.tensor([[0, 2], [2, 5], [9, -1]]), 7) == 3
    assert c.flops(64, 2, 4096, 14336) == 6 * 4096 * 14336 * 128


def test_pick_config_spreads_small_batches(moe, monkeypatch):
    # an H200's 132 multiprocessors: at least 264 programs over the bound of active slots
    monkeypatch.setattr(moe.fwd, "sm_count", lambda device: 132)
    kimi = moe.fwd.pick_config(1, 8, 256, 1, 2304, 1024, CPU)
    assert (kimi.block_m, kimi.block_n_up, kimi.block_n_down) == (16, 32, 64)
    mixtral = moe.fwd.pick_config(1, 2, 8, 0, 4096, 14336, CPU)
    assert (mixtral.block_n_up, mixtral.block_n_down) == (64, 16)
    wide = moe.fwd.pick_config(64, 2, 8, 0, 4096, 14336, CPU)
    assert (wide.block_m, wide.block_n_up, wide.block_n_down) == (32, 64, 64)
    assert wide.num_stages * 2 * wide.block_k * (32 + 128) <= moe.fwd.SMEM_BUDGET


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_forward_replays_in_a_cuda_graph_with_new_routing(moe):
    dev = torch.device("cuda")
    dims = {**moe.bench.KIMI, "experts": 64}
    args = {**moe.bench.make_weights(device=dev, **dims),
            **moe.bench.make_routing(8, device=dev, **dims)}
    y = moe.fwd.moe_forward(**args)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = moe.fwd.moe_forward(**args)
    fresh = moe.bench.make_routing(8, device=dev, seed=5, **dims)
    for key in ("x", "expert_ids", "expert_weights"):
        args[key].copy_(fresh[key])
    graph.replay()
    torch.cuda.synchronize()
    assert rel_err(y, moe.bench.moe_grouped_fp32(**args)) < TOL[torch.bfloat16]
