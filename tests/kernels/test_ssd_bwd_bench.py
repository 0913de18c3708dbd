"""bench/kernels_ssd_bwd.py on the CPU (--smoke, Triton interpreter): checked, timed, recorded."""

from __future__ import annotations

import json

import pytest
import torch


@pytest.fixture
def bench(kernels):
    # imported once the kernels fixture has chosen Triton's mode
    from bench import kernels_ssd_bwd

    return kernels_ssd_bwd


class _RefusingBackward(torch.autograd.Function):
    """A peer stand-in whose forward is right and whose backward raises, as fla's does on
    Triton 3.6 / Hopper."""

    @staticmethod
    def forward(ctx, y, x):
        return y.clone()

    @staticmethod
    def backward(ctx, dy):
        raise RuntimeError("backward refused on this Triton")


def test_smoke_run_checks_times_and_records_absent_peers(bench, tmp_path, monkeypatch):
    from flopkb_kernels.ssd.reference import ssd_chunked_reference

    def fake_peers(chunk):
        def run(x, dt, A, Bm, Cm, D):
            with torch.no_grad():
                y = ssd_chunked_reference(x, dt, A, Bm, Cm, D, chunk_size=16)
            return _RefusingBackward.apply(y, x)

        refusing = bench.Impl("fla:stand-in", "peer", run, {"version": "test"})
        return [refusing], [{"name": "mamba_ssm:chunk256", "kind": "peer",
                             "not_run": "ImportError: mamba_ssm is not installed"}]

    monkeypatch.setattr(bench, "peer_impls", fake_peers)
    out = tmp_path / "bwd.json"
    assert bench.main(["--smoke", "--out", str(out), "--rounds", "2", "--reps", "1",
                       "--variants", "q128"]) == 0
    data = json.loads(out.read_text())
    assert data["smoke"] is True and data["machine"]["python"]
    (shape,) = data["shapes"]
    rows = {r["name"]: r for r in shape["rows"]}
    ours = rows["ours:q128"]
    assert ours["check"]["correct"] is True
    assert set(ours["check"]["rel_err"]) == {"y", "dx", "ddt", "dA", "dB", "dC", "dD"}
    for ps in ("fwd", "bwd", "fwd_bwd"):
        assert len(ours["timing"][ps]["rounds"]) == 2
        assert ours["timing"][ps]["median_ms"] > 0
    assert rows["mamba_ssm:chunk256"]["not_run"].startswith("ImportError")
    peer = rows["fla:stand-in"]
    assert "backward refused" in peer["not_run_passes"]["bwd"]
    assert list(peer["timing"]) == ["fwd"]
    assert shape["ratios"]["fwd"]["ours_over_fla"] > 0
    assert shape["ratios"]["bwd"]["ours_over_fla"] is None
    assert shape["cost"]["ours:q128"]["flops_bwd"] == 2 * shape["cost"]["ours:q128"]["flops_fwd"]
    # No measured ceilings on the CPU, so no roofline fractions.
    assert data["ceilings"] is None and "roofline" not in ours


def test_roofline_fraction_per_pass(bench):
    costs = {"flops_fwd": 2e12, "flops_bwd": 4e12, "bytes_fwd": 1e9, "bytes_bwd": 1e12}
    timing = {"fwd": {"median_ms": 4.0}, "bwd": {"median_ms": 500.0}}
    ceil = {"bf16_matmul_tflops": 1000.0, "copy_gbps": 4000.0}
    got = bench.roofline(costs, timing, ceil)
    # fwd: the FLOP floor (2 ms) beats the byte floor (0.25 ms); bwd: bytes (250 ms) beat 4 ms.
    assert got["fwd"]["floor_ms"] == pytest.approx(2.0)
    assert got["fwd"]["frac_roofline"] == pytest.approx(0.5)
    assert got["bwd"]["floor_ms"] == pytest.approx(250.0)
    assert got["bwd"]["tflops"] == pytest.approx(8.0)
    assert set(got) == {"fwd", "bwd"}


def test_unknown_variant_is_a_usage_error(bench, tmp_path):
    assert bench.main(["--smoke", "--out", str(tmp_path / "x.json"), "--variants", "nope"]) == 2
