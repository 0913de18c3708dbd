"""The reduction experiments (D1, D2, D3 and the 20-30% row): judging on synthetic measurements,
the D2 partition logic, the scatter-add pair, and CUB's absence as a `not-run`.

Everything here runs on the CPU; CUB itself is exercised by the `gpu` test in
tests/kernels/test_reduction.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import types

import pytest

from flopkb.evidence import catalogue, hooks
from flopkb.evidence.measurement import Measurement
from flopkb.grammar.magnitude import parse_magnitude
from flopkb.kernelpkg import load_op
from flopkb.verify.context import Context, ExperimentError, PeerUnavailable
from flopkb.verify.experiments import (
    determinism,
    determinism_overhead,
    partition_sim,
)

torch = pytest.importorskip("torch")
bench = load_op("reduction", "bench")
scatter = load_op("reduction", "scatter")
QUAL = parse_magnitude("qualitative")
FIGURE = parse_magnitude("20-30%")
M = 2**20
# D3's judge as verify and validate call it: handed its declaration, which states the criterion
D3 = hooks.experiment_module(catalogue.get("determinism-overhead"), None)


def _d1(impl: str, **primary) -> Measurement:
    return Measurement({"impl": impl, "primary": {"elements": 16 * M, "repeats": 100, **primary}})


@pytest.mark.parametrize(("counts", "verdict"), [
    ((3, 1, 1, 3), "confirmed"),
    # not_guaranteed need not vary: the levels are still told apart by their bits
    ((1, 1, 1, 2), "confirmed"),
    ((1, 1, 1, 1), "inconclusive"),
    ((5, 2, 1, 3), "refuted"),
    ((5, 1, 2, 3), "refuted"),
])
def test_d1_cub_levels(counts, verdict):
    ng, rr, g2g, levels = counts
    j = determinism.judge(_d1("cub", not_guaranteed_distinct=ng, run_to_run_distinct=rr,
                              gpu_to_gpu_distinct=g2g, levels_distinct=levels), QUAL, {})
    assert j.verdict == verdict
    assert j.measured.value == max(rr, g2g)
    assert "not_guaranteed" in j.criterion and "CUB" in j.what


@pytest.mark.parametrize(("atomic", "ordered", "verdict"),
                         [(26, 1, "confirmed"), (1, 1, "inconclusive"), (26, 2, "refuted")])
def test_d1_bundled_pair(atomic, ordered, verdict):
    j = determinism.judge(_d1("bundled", atomic_distinct=atomic, ordered_distinct=ordered),
                          QUAL, {})
    assert j.verdict == verdict


def _row(n: int, ratio: float, spread: float = 0.02, **extra) -> dict:
    return {"elements": n, "ratio": ratio, "ratio_low": ratio - spread,
            "ratio_high": ratio + spread, **extra}


def _d3(impl: str, rows: list[dict], n0: int = 16 * M) -> Measurement:
    primary = next(r for r in rows if r["elements"] == n0)
    return Measurement({"impl": impl, "primary": primary}, rows)


def test_d3_reads_gpu_to_gpu_over_run_to_run_at_a_fixed_point():
    # the claim's point is 16M: below READ_AT (256M) the CUB pair is read at 256M, whatever the
    # smaller sizes gave
    rows = [_row(16 * M, 0.9), _row(64 * M, 0.8), _row(256 * M, 1.2)]
    j = D3.judge(_d3("cub", rows), QUAL, {})
    assert j.verdict == "confirmed" and "256M" in j.what and "claim's point is 16M" in j.what
    assert j.measured.value == pytest.approx(1.2)
    rows = [_row(16 * M, 1.2), _row(64 * M, 1.6), _row(256 * M, 0.9)]
    assert D3.judge(_d3("cub", rows), QUAL, {}).verdict == "refuted"
    # a claim at a larger point is read there
    big = 1024 * M
    j = D3.judge(_d3("cub", [_row(256 * M, 0.9), _row(big, 1.25)], n0=big), QUAL, {})
    assert j.verdict == "confirmed" and "1024M" in j.what
    j = D3.judge(_d3("bundled", [_row(16 * M, 1.01, 0.4)]), QUAL, {})
    assert j.verdict == "inconclusive" and "fixed-order" in j.what


def test_d3_a_launch_bound_reading_point_is_not_judged_and_never_moves():
    # judge revision 1 read 64M, launch-bound on one H200 host and not on the other; a
    # launch-bound 256M is inconclusive, never read at another size instead
    rows = [_row(16 * M, 1.5), _row(64 * M, 1.5), _row(256 * M, 1.4, launch_bound=True,
                                                       host_issue_ms=0.3)]
    j = D3.judge(_d3("cub", rows), QUAL, {})
    assert j.verdict == "inconclusive" and "launch-bound" in j.reason and "256M" in j.reason
    j = D3.judge(_d3("cub", [_row(16 * M, 1.5), _row(64 * M, 1.5)]), QUAL, {})
    assert j.verdict == "inconclusive" and "not measured" in j.reason


@pytest.mark.parametrize(("ratio", "verdict"), [
    (1.27, "confirmed"),
    (1.06, "refuted"),
    (1.45, "refuted"),
    # the band reaches into the claimed range: neither inside nor disjoint
    (1.34, "inconclusive"),
])
def test_figure_row_reads_256m_only(ratio, verdict):
    # 64M far outside the claim changes nothing: the reading point is fixed
    rows = [_row(16 * M, 1.1), _row(64 * M, 1.9), _row(256 * M, ratio, spread=0.03)]
    j = D3.judge(_d3("cub", rows), FIGURE, {})
    assert j.verdict == verdict and j.unit == "%"
    assert "256M" in j.what and "64M" not in j.what
    assert j.measured.value == pytest.approx(100 * (ratio - 1))


def test_figure_row_is_inconclusive_without_its_reading_point():
    rows = [_row(16 * M, 1.9), _row(64 * M, 1.25), _row(256 * M, 1.25, launch_bound=True)]
    j = D3.judge(_d3("cub", rows), FIGURE, {})
    assert j.verdict == "inconclusive" and "launch-bound" in j.reason
    j = D3.judge(_d3("cub", [_row(16 * M, 1.25)]), FIGURE, {})
    assert j.verdict == "inconclusive" and "not measured" in j.reason


def test_figure_row_is_not_applicable_to_the_bundled_pair():
    rows = [_row(16 * M, 1.0), _row(256 * M, 1.25)]
    j = D3.judge(_d3("bundled", rows), FIGURE, {})
    assert j.verdict == "not-applicable" and "cub implementation only" in j.reason


def test_sizes_keep_the_claims_point_first_and_the_figures_size_when_quick():
    assert determinism_overhead.sizes(16 * M, quick=True) == [16 * M, 256 * M]
    assert determinism_overhead.sizes(16 * M, quick=False)[0] == 16 * M
    assert sorted(determinism_overhead.sizes(16 * M, quick=False)) == list(
        determinism_overhead.SWEEP)


# ----- D2 -----


def _ctx() -> Context:
    return Context(gpu=False)


def test_d2_grids_come_from_the_kbs_sm_counts(kernels_loaded):
    part = kernels_loaded
    counts = partition_sim.sm_counts(_ctx())
    assert counts[132] == ["h100-sxm", "h200-sxm"] and counts[108] == ["a100-pcie-80gb",
                                                                       "a100-sxm4-80gb"]
    grids = partition_sim.partitions(part, 64 * M, counts, 4096, 8)
    # five SM counts, five grids; H100 and H200 share theirs
    assert sorted(grids) == [82 * 40, 108 * 40, 128 * 40, 132 * 40, 142 * 40]
    assert grids[132 * 40] == (132, ["h100-sxm", "h200-sxm"])
    # a small input has fewer tiles than any grid: one partition for all, nothing to compare
    assert len(partition_sim.partitions(part, M, counts, 4096, 8)) == 1


@pytest.fixture(scope="module")
def kernels_loaded():
    from flopkb.kernelpkg import load_op

    return load_op("reduction", "partitioned")


def test_d2_bitwise_comparison_over_partitions(kernels_loaded):
    ctx = _ctx()
    cond = {"elements": 8192, "repeats": 1, "tile": 128, "blocks_per_sm": 0.02}
    rows = partition_sim._bundled_rows(ctx, cond, seeds=1)
    assert {r["parts"] for r in rows} == {8, 10, 12, 13, 14}
    assert all(r["repeat_distinct"] == 1 for r in rows)
    s = partition_sim.summarize(rows)
    assert s["partitions"] == 5 and s["distinct_per_seed"] == [len({r["bits"] for r in rows})]
    assert all(c["ok"] for c in ctx.checks)


def test_d2_refuses_to_run_as_anything_but_a_simulation():
    with pytest.raises(ExperimentError, match="simulation cannot be switched off"):
        partition_sim.measure(_ctx(), {**partition_sim.DEFAULTS, "simulation": False})


@pytest.mark.parametrize(("summary", "verdict"), [
    ({"kind": "partition", "partitions": 5, "distinct_per_seed": [1, 3], "repeat_max": 1},
     "confirmed"),
    ({"kind": "partition", "partitions": 5, "distinct_per_seed": [1, 1], "repeat_max": 1},
     "inconclusive"),
    ({"kind": "partition", "partitions": 5, "distinct_per_seed": [4], "repeat_max": 2}, "error"),
    ({"kind": "rotation", "rotations": 5, "run_to_run_per_seed": [3], "gpu_to_gpu_per_seed": [1],
      "repeat_max": 1}, "confirmed"),
    ({"kind": "rotation", "rotations": 5, "run_to_run_per_seed": [3], "gpu_to_gpu_per_seed": [2],
      "repeat_max": 1}, "inconclusive"),
    ({"kind": "rotation", "rotations": 5, "run_to_run_per_seed": [1], "gpu_to_gpu_per_seed": [1],
      "repeat_max": 1}, "inconclusive"),
])
def test_d2_a_simulation_confirms_the_mechanism_or_stays_inconclusive(summary, verdict):
    j = partition_sim.judge(Measurement({"summary": summary}), QUAL, {})
    assert j.verdict == verdict
    assert j.criterion.startswith("SIMULATION")


# ----- scatter-add and CUB's absence -----


def test_deterministic_mode_is_restored_even_on_error():
    before = torch.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="boom"), scatter.deterministic_algorithms(not before):
        assert torch.are_deterministic_algorithms_enabled() is (not before)
        raise RuntimeError("boom")
    assert torch.are_deterministic_algorithms_enabled() is before


def test_scatter_rows_count_and_time_both_modes(monkeypatch):
    from flopkb.verify import timing

    monkeypatch.setattr(timing, "time_cuda", lambda fn, sets, **kw: (
        fn(*sets[0]), timing.summarize([1.0, 1.1, 0.9]))[1])
    ctx = _ctx()
    [row] = determinism.scatter_rows(ctx, 3000, 16, repeats=3)
    # the CPU's index_add_ is sequential: one result in either mode
    assert row["nondeterministic_distinct"] == row["deterministic_distinct"] == 1
    assert row["ratio"] == pytest.approx(1.0) and row["row"] == "scatter"
    assert [c["ok"] for c in ctx.checks] == [True, True]
    assert {"index_add_ nondeterministic n=3000", "index_add_ deterministic n=3000"} <= set(
        ctx.timings)


def test_no_gpu_makes_cub_a_peer_unavailable():
    with pytest.raises(PeerUnavailable, match="CUDA GPU only"):
        bench.cub_levels(_ctx())


def test_a_failed_cub_build_is_a_peer_unavailable_with_its_line(monkeypatch):
    class CubUnavailable(RuntimeError):
        pass

    def load(device):
        raise CubUnavailable("nvcc failed on cub_levels.cu: x.cu(3): error: boom")

    monkeypatch.setattr(bench, "cub", types.SimpleNamespace(CubUnavailable=CubUnavailable,
                                                            load=load))
    ctx = types.SimpleNamespace(device=torch.device("cuda"))
    with pytest.raises(PeerUnavailable, match=r"^cub: nvcc failed on cub_levels\.cu"):
        bench.cub_levels(ctx)


def test_cpu_checks_pass_and_report_the_cub_plan():
    for module in (determinism, determinism_overhead, partition_sim):
        ctx = _ctx()
        module.cpu_check(ctx)
        assert ctx.checks and all(c["ok"] for c in ctx.checks), module.__name__
        [plan] = [c for c in ctx.checks if c["kernel"] == "reduction.cub (build plan)"]
        assert ("command" in plan) is plan["available"]


def test_without_cub_the_claim_is_recorded_not_run_and_bundled_still_judges(monkeypatch, tmp_path):
    from flopkb.kb import load_kb
    from flopkb.verify import context, execute, machine, plan, timing
    from flopkb.verify.experiments import calibration
    from tests.unit.verify_fixtures import write_kb

    monkeypatch.setattr(execute, "gpu_available", lambda: True)
    monkeypatch.setattr(machine, "fingerprint", lambda: {"gpu": "NVIDIA H200", "torch": "x"})
    monkeypatch.setattr(timing, "time_cuda", lambda fn, sets, **kw: (
        fn(*sets[0]), timing.summarize([1.0, 1.02, 0.98]))[1])
    # synthetic times say nothing about the hardware
    monkeypatch.setattr(context.Ceilings, "floor_ms", lambda self, f, b, rate_scale=1.0: 0.0)
    monkeypatch.setattr(calibration, "DEFAULTS", {"gemm_size": 32, "copy_bytes": 4096})
    monkeypatch.setattr(determinism_overhead, "SWEEP", (2048,))
    root = write_kb(tmp_path)
    kb, _ = load_kb(root)
    jobs, _ = plan.plan(kb, claim="test-class/overhead")
    _, results = execute.run_gpu(kb, jobs, impl="all", device="cpu", command="t")
    [result] = [r for r in results if r.claim == "test-class/overhead"]
    # CUB is the default of the reduction side: without it the claim is not-run, with the reason
    assert result.verdict == "not-run" and "CUDA GPU only" in result.reason
    verdicts = {j["combination"]["reduction"]: j["verdict"] for j in result.judgements}
    assert verdicts["cub"] == "not-run" and verdicts["bundled"] != "error"


def test_d3_states_its_declared_criterion_and_for_cub_where_it_is_read():
    # the texts the stored evidence carries: the declaration's, and for CUB its reading point
    declared = "qualitative 'has an overhead': ratio interval above 1.05 confirms, below 1 refutes"
    j = D3.judge(_d3("bundled", [_row(16 * M, 1.2)]), QUAL, {})
    assert j.criterion == declared
    j = D3.judge(_d3("cub", [_row(16 * M, 1.2), _row(256 * M, 1.2)]), QUAL, {})
    assert j.criterion == (
        f"{declared}; read at 256M fp32 (the claim's point when larger), fixed before any "
        "timing; a launch-bound reading point is never judged (events cannot time a call the "
        "host issues more slowly than the device runs it)")
