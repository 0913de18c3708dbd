"""The GPU pipeline (calibration, measure, judge, evidence, plots) driven on the CPU.

The kernels run through the Triton interpreter at tiny sizes and `time_cuda` is replaced by a
synthetic timer, so this checks the plumbing, not the speed: every experiment reaches a verdict
other than `error`, and every evidence file it writes loads back through the record model.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import yaml

from flopkb.kb import load_kb
from flopkb.model import EvidenceRecord
from flopkb.verify import runner
from flopkb.verify.timing import summarize
from tests.unit.verify_fixtures import write_kb

torch = pytest.importorskip("torch")


def _fake_time_cuda(fn, arg_sets, **_how):
    for args in arg_sets[:1]:
        fn(*args)
    return summarize([1.0, 1.02, 0.98, 1.01, 0.99])


@pytest.fixture
def cpu_gpu(monkeypatch, tmp_path):
    """Pretend a GPU named 'NVIDIA H200' is there, run its path on the CPU."""
    from flopkb.verify import context, machine, timing
    from flopkb.verify.experiments import (
        _ssd,
        calibration,
        chunked_vs_quadratic,
        kernel_vs_pytorch,
        prefill_trend,
        roofline,
        ruggedness,
        scan_benchmark,
        schedule,
        ssd_vs_attention,
        ssd_vs_scan,
    )

    monkeypatch.setattr(runner, "gpu_available", lambda: True)
    monkeypatch.setattr(machine, "fingerprint", lambda: {"gpu": "NVIDIA H200", "torch": "x"})
    # The declared time limits are a GPU's (seconds of device work); here the interpreter runs
    # the kernels on a 2-core machine that may be busy, so the wall clock would cut sweeps short
    # or time experiments out (it did, once, beside a CPU hog). What these tests check is the
    # pipeline, not the limits (tests/unit/test_verify_runner.py checks those): 50x the limits.
    from flopkb.verify.context import Context

    begin = Context.begin
    monkeypatch.setattr(Context, "begin", lambda self, limit: begin(self, limit * 50))
    monkeypatch.setattr(timing, "time_cuda", _fake_time_cuda)
    # no CUDA allocator on the CPU: a fixed synthetic footprint for the memory experiment
    monkeypatch.setattr(timing, "memory_mark", lambda: 0)
    monkeypatch.setattr(timing, "memory_since",
                        lambda mark: {"peak_mem_bytes": 2**20, "step_extra_mem_bytes": 2**20})
    # Synthetic times say nothing about the hardware: the floor is unit-tested separately.
    monkeypatch.setattr(context.Ceilings, "floor_ms", lambda self, f, b, rate_scale=1.0: 0.0)
    monkeypatch.setattr(calibration, "DEFAULTS", {"gemm_size": 32, "copy_bytes": 4096})
    monkeypatch.setattr(ssd_vs_attention, "QUICK", (32, 64))
    monkeypatch.setattr(ssd_vs_attention, "BACKEND", "math")
    monkeypatch.setattr(chunked_vs_quadratic, "QUICK", (16, 32))
    monkeypatch.setattr(kernel_vs_pytorch, "QUICK", (32,))
    monkeypatch.setattr(kernel_vs_pytorch, "READ_AT", 32)
    monkeypatch.setattr(ruggedness, "QUICK_OFFSETS", (-1, 0, 1))
    monkeypatch.setattr(roofline, "REFERENCE_T", 32)
    monkeypatch.setattr(roofline, "ELEMENTWISE_N", 256)
    monkeypatch.setattr(roofline, "GEMM_N", 32)
    monkeypatch.setattr(_ssd, "PREFIX", 16)
    monkeypatch.setattr(schedule, "STATE_SWEEP", (8,))
    monkeypatch.setattr(ssd_vs_scan, "STATE_SWEEP", (8,))
    monkeypatch.setattr(scan_benchmark, "QUICK", (16, 32, 64))
    monkeypatch.setattr(scan_benchmark, "BACKEND", "math")
    monkeypatch.setattr(prefill_trend, "QUICK", (16, 32, 64))
    _small_reductions(monkeypatch)
    return write_kb(tmp_path)


class _CpuCub:
    """CUB's levels stood in for on the CPU: an unordered, a fixed, an exact-then-rounded sum."""

    description = "CPU stand-in for CUB's levels (tests)"

    def sum(self, x, level):
        if level == "not_guaranteed":
            return x[torch.randperm(x.numel())].sum()
        return x.sum() if level == "run_to_run" else x.double().sum().float()


def _small_reductions(monkeypatch):
    from flopkb.verify.experiments import _reduction, _scatter, determinism, determinism_overhead

    def cub_levels(ctx, side="reduction"):
        ctx.describe_impl(side, _CpuCub.description)
        return _CpuCub()

    monkeypatch.setattr(_reduction, "cub_levels", cub_levels)
    monkeypatch.setattr(determinism, "SWEEP", (2048,))
    monkeypatch.setattr(_scatter, "DEFAULTS", {"elements": 4096, "bins": 64, "repeats": 3})
    monkeypatch.setattr(determinism_overhead, "SWEEP", (2048, 8192))
    monkeypatch.setattr(determinism_overhead, "READ_AT", 8192)


@pytest.mark.slow
def test_gpu_pipeline_on_cpu_reaches_verdicts_and_writes_loadable_evidence(cpu_gpu):
    root = cpu_gpu
    kb, findings = load_kb(root)
    assert not findings
    jobs, broken = runner.plan(kb)
    assert not broken
    machine, results = runner.run_gpu(kb, root, jobs, quick=True, device="cpu",
                                      command="flopkb verify --gpu --quick")
    assert machine["accelerator"] == "h200-sxm"
    errors = {r.claim or r.experiment: r.reason for r in results if r.verdict == "error"}
    assert errors == {}
    verdicts = {r.claim: r.verdict for r in results}
    assert verdicts["test-class/determinism"] in {"confirmed", "inconclusive", "refuted"}
    # D2 is a simulation: never refuted, and its evidence says so
    assert verdicts["test-class/partition"] in {"confirmed", "inconclusive"}
    files = sorted((root / "records" / "evidence").glob("*.yaml"))
    assert len(files) == len(results)
    for path in files:
        record = EvidenceRecord.model_validate(yaml.safe_load(path.read_text()))
        assert record.id == path.stem
        assert record.kernel_hashes and all(len(h) == 64 for h in record.kernel_hashes.values())
        if record.claim:
            assert record.correctness and all(c["ok"] for c in record.correctness)
    kb2, findings2 = load_kb(root)
    assert not findings2 and len(kb2.evidence) == len(results)
    [sim] = [e for e in kb2.evidence.values() if e.claim == "test-class/partition"]
    assert sim.conditions["simulation"] is True


@pytest.mark.slow
def test_impl_all_on_cpu_records_absent_peers_as_not_run(cpu_gpu, monkeypatch, tmp_path):
    """The real A2 and B2 experiments under --impl all with no peer installed: the bundled
    combination reaches a verdict, every peer combination is a not-run judgement with a reason."""
    import importlib.util

    from flopkb.verify.peers import mamba_cuda

    if any(importlib.util.find_spec(name) for name in ("mamba_ssm", "fla")):
        pytest.skip("a peer library is installed here")
    monkeypatch.setenv("FLOPKB_MAMBA_SDIST", str(tmp_path / "absent.tar.gz"))
    monkeypatch.delenv("FLOPKB_MAMBA_EXT", raising=False)
    monkeypatch.setattr(mamba_cuda, "_MODULE", {})
    root = cpu_gpu
    kb, _ = load_kb(root)
    jobs, _ = runner.plan(kb, record="test-class")
    jobs = [j for j in jobs if j.experiment in {"ssd-vs-scan", "ssd-head-dim-memory"}]
    _, results = runner.run_gpu(kb, root, jobs, quick=True, impl="all", device="cpu",
                                command="flopkb verify --gpu --quick --impl all")
    by_claim = {r.claim: r for r in results if r.claim}
    a2 = by_claim["test-class/ssd-scan"]
    assert a2.verdict in {"confirmed", "refuted", "inconclusive"}
    assert len(a2.judgements) == 6
    peers = [j for j in a2.judgements if set(j["combination"].values()) != {"bundled"}]
    assert peers and all(j["verdict"] == "not-run" and j["reason"] for j in peers)
    assert not a2.implementation_sensitive
    b2 = by_claim["test-class/memory"]
    assert [j["verdict"] for j in b2.judgements][1:] == ["not-run", "not-run"]
