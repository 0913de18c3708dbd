"""Absorbed MLA decode (kernels/mla) against the unabsorbed float32 reference, on odd sizes.

Through TRITON_INTERPRET=1 on the CPU (tests/kernels/conftest.py). Outputs are NaN-filled first,
so a head or column the kernels never write fails. Bounds: fp32 inputs 1e-5 relative L2 (the
same float32 arithmetic in another order); bf16 2e-2 (q_latent, p and o each rounded to bf16).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from accuracy import rel_err
from op_modules import op_modules

TOL = {torch.float32: 1e-5, torch.bfloat16: 2e-2}
ROOT = Path(__file__).resolve().parents[2]
# odd sizes: nothing a power of two, so every mask edge is crossed
ODD = {"heads": 5, "rank": 40, "rope": 20, "nope": 24, "v_dim": 24}
KIMI_DIMS = {"heads": 5, "rank": 512, "rope": 64, "nope": 128, "v_dim": 128}


@pytest.fixture(scope="module")
def mla(kernels) -> SimpleNamespace:
    return op_modules("mla", "step", "cost", "bench", ref="reference")


def inputs(mla, batch: int, capacity: int, lengths: list[int], dtype: torch.dtype,
           dims: dict[str, int]) -> dict[str, torch.Tensor]:
    args = mla.bench.make_inputs(batch, capacity, device=torch.device("cpu"), dtype=dtype,
                                 **dims)
    args["lengths"] = torch.tensor(lengths, dtype=torch.int32)
    return args


def run_step(mla, args: dict, **kw) -> torch.Tensor:
    b, h, _ = args["q_nope"].shape
    out = torch.full((b, h, args["w_uv"].shape[2]), math.nan, dtype=args["q_nope"].dtype)
    o = mla.step.mla_decode_step(**args, out=out, **kw)
    assert o is out
    return o


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("heads_as_n", [True, False])
def test_step_matches_reference_odd_sizes(mla, dtype, heads_as_n):
    args = inputs(mla, 3, 300, [37, 300, 1], dtype, ODD)
    cfg = mla.step.MLAConfig(block_n=16, heads_as_n=heads_as_n, num_stages=1)
    o = run_step(mla, args, num_splits=7, config=cfg)
    assert o.dtype == dtype
    assert rel_err(o, mla.ref.mla_decode_reference(**args)) < TOL[dtype]


@pytest.mark.parametrize("heads_as_n", [True, False])
def test_step_matches_reference_kimi_dims(mla, heads_as_n):
    args = inputs(mla, 2, 70, [70, 33], torch.bfloat16, KIMI_DIMS)
    cfg = mla.step.MLAConfig(block_n=32, heads_as_n=heads_as_n)
    o = run_step(mla, args, num_splits=3, config=cfg)
    assert rel_err(o, mla.ref.mla_decode_reference(**args)) < TOL[torch.bfloat16]


def test_split_count_does_not_change_the_result(mla):
    # 1 split, several, and more splits than token blocks (empty splits must weigh nothing)
    args = inputs(mla, 2, 37, [37, 20], torch.float32, ODD)
    cfg = mla.step.MLAConfig(block_n=16)
    outs = [run_step(mla, args, num_splits=s, config=cfg) for s in (1, 2, 5)]
    ref = mla.ref.mla_decode_reference(**args)
    for o in outs:
        assert rel_err(o, ref) < TOL[torch.float32]


def test_lengths_are_clamped_and_empty_gives_zero(mla):
    args = inputs(mla, 3, 40, [0, 1000, -5], torch.float32, ODD)
    o = run_step(mla, args, num_splits=3, config=mla.step.MLAConfig(block_n=16))
    assert torch.equal(o[0], torch.zeros_like(o[0]))
    assert torch.equal(o[2], torch.zeros_like(o[2]))
    full = {**args, "lengths": torch.tensor([40, 40, 40], dtype=torch.int32)}
    assert rel_err(o[1], mla.ref.mla_decode_reference(**full)[1]) < TOL[torch.float32]


def test_default_split_count_fills_the_cpu_stand_in(mla):
    cfg = mla.step.MLAConfig(block_n=16)
    cpu = torch.device("cpu")
    # 4 stand-in multiprocessors on the CPU: B x splits covers them, never past the capacity
    assert mla.step.default_splits(1, 1000, cfg, cpu) == 4
    assert mla.step.default_splits(3, 1000, cfg, cpu) == 1
    assert mla.step.default_splits(1, 20, cfg, cpu) == 2


def test_absorbed_torch_reference_equals_expanded_reference(mla):
    # the bench checks large inputs against the absorbed order: it must equal the expansion
    args = inputs(mla, 3, 300, [37, 300, 1], torch.float32, ODD)
    absorbed = mla.ref.mla_decode_absorbed(**args, chunk=64)
    assert rel_err(absorbed, mla.ref.mla_decode_reference(**args)) < 1e-5


@pytest.mark.parametrize("name", ["torch_naive", "torch_absorbed", "sdpa_latent"])
def test_peers_match_reference(mla, name):
    peer = mla.bench.PEERS[name]
    args = inputs(mla, 3, 50, [50, 50, 50], torch.float32, ODD)
    ref = mla.ref.mla_decode_reference(**args)
    assert rel_err(peer(**args, full=True), ref) < 1e-5
    partial = {**args, "lengths": torch.tensor([37, 50, 1], dtype=torch.int32)}
    assert rel_err(peer(**partial), mla.ref.mla_decode_reference(**partial)) < 1e-5


def _bad(args: dict, **change) -> dict:
    return {**args, **change}


def test_wrapper_rejects_bad_arguments(mla, monkeypatch):
    args = inputs(mla, 2, 30, [30, 10], torch.float32, ODD)
    f = mla.step.mla_decode_step
    cases = {
        "q_nope of shape": _bad(args, q_nope=args["q_nope"][0]),
        "cache of dtype float32": _bad(args, cache=args["cache"].half()),
        "cache of shape": _bad(args, cache=args["cache"][..., :-1].contiguous()),
        "cache to be contiguous": _bad(args, cache=args["cache"].transpose(0, 1).contiguous()
                                       .transpose(0, 1)),
        "lengths of dtype int32, int64": _bad(args, lengths=args["lengths"].float()),
        "lengths of shape": _bad(args, lengths=args["lengths"][:1]),
        "w_uv of shape": _bad(args, w_uv=args["w_uv"][:2].contiguous()),
        "w_uk of shape": _bad(args, w_uk=args["w_uk"][:, :-1].contiguous()),
        "q_rope of dtype float32": _bad(args, q_rope=args["q_rope"].double()),
        "lengths to be a torch.Tensor": _bad(args, lengths=[30, 10]),
    }
    for message, bad in cases.items():
        with pytest.raises(ValueError, match=f"expected {message}"):
            f(**bad)
    with pytest.raises(ValueError, match="expected out of shape"):
        f(**args, out=torch.empty(2, 5, 7))
    for splits in (0, -1):
        with pytest.raises(ValueError, match="expected num_splits >= 1"):
            f(**args, num_splits=splits)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="expected CUDA tensors"):
        f(**args)


def test_cost_counts(mla):
    c = mla.cost
    tokens = 1 << 20
    latent = tokens * 576 * 2
    weights = 32 * 512 * (128 + 128) * 2
    assert c.nbytes(1, tokens, 32) == latent + weights + 32 * (128 + 64 + 128) * 2
    # issue 24's floor: the 1.21 GB latent of a 1M context at 4.3 TB/s is 0.28 ms
    assert abs(latent / 1e9 - 1.208) < 1e-3
    assert 0.27 < c.nbytes(1, tokens, 32) / 4.3e12 * 1e3 < 0.29
    assert c.flops(1, tokens, 32) == 2 * tokens * 32 * (512 + 64 + 512) + 2 * 32 * 512 * 256
    assert c.flops_unabsorbed(1, tokens, 32) > 10 * c.flops(1, tokens, 32)
    assert c.workspace_bytes(1, 32, 132) == 2 * 32 * 132 * 513 * 4 + 2 * 32 * 512 * 4


def test_bench_script_cpu_smoke(tmp_path):
    out = tmp_path / "smoke.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "bench/kernels_decode_mla_moe.py"),
                           "--cpu-smoke", "--out", str(out)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    data = json.loads(out.read_text())
    rows = data["mla"] + data["moe"]
    assert {r["impl"] for r in data["mla"]} >= {"bundled", "torch_naive", "torch_absorbed"}
    assert {r["impl"] for r in data["moe"]} >= {"bundled", "hf_loop", "dense_active"}
    bundled = [r for r in rows if r["impl"] == "bundled"]
    assert bundled and all(r["correct"] for r in bundled)
    # no timing on the CPU: the smoke run must not invent figures
    assert all(r.get("graph_ms") is None and r.get("eager_ms") is None for r in rows)
    assert "floor" in done.stdout


def test_bench_wide_sweep_cpu_smoke(tmp_path):
    # --wide: the 36-config grid, and the step's own default config as a row of its own (timed
    # in the rounds beside the fastest on a GPU), checked like every implementation
    out = tmp_path / "wide.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "bench/kernels_decode_mla_moe.py"),
                           "--cpu-smoke", "--sections", "mla", "--wide", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = {r["impl"]: r for r in json.loads(out.read_text())["mla"]}
    bundled, default = rows["bundled"], rows["bundled_default_config"]
    assert len(bundled["sweep"]) == 36 and all("rel_err" in e for e in bundled["sweep"])
    assert default["config"] == bundled["default_config"] != bundled["config"]
    assert default["correct"] and default.get("graph_ms") is None
    # the default row is ours, never the "best peer" the table compares against
    assert "bundled_default_config" not in done.stdout.splitlines()[-2]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_step_replays_in_a_cuda_graph_with_new_lengths(mla):
    dev = torch.device("cuda")
    args = mla.bench.make_inputs(2, 4096, device=dev, **mla.bench.KIMI)
    o = mla.step.mla_decode_step(**args)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o = mla.step.mla_decode_step(**args)
    args["lengths"].copy_(torch.tensor([3000, 17], device=dev))
    args["cache"].normal_()
    graph.replay()
    torch.cuda.synchronize()
    ref = mla.ref.mla_decode_reference(**args)
    assert rel_err(o, ref) < TOL[torch.bfloat16]
