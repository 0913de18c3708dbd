"""Plan, sharding, machine matching, applicability, and the experiment context's guards."""

from __future__ import annotations

import pytest

from flopkb.evidence import catalogue
from flopkb.kb import load_kb
from flopkb.verify import machine, plan
from tests.unit.verify_fixtures import ROWS, all_experiments, linked_experiments, write_kb


@pytest.fixture
def kb(tmp_path):
    kb, findings = load_kb(write_kb(tmp_path))
    assert not findings
    return kb


def test_fixture_links_every_experiment():
    assert linked_experiments() == all_experiments()


@pytest.mark.parametrize("world", [1, 2, 3, 8])
def test_shard_partitions_items_over_ranks(world):
    items = list(range(17))
    parts = [plan.shard(items, r, world) for r in range(world)]
    assert sorted(x for p in parts for x in p) == items
    assert all(x % world == r for r, p in enumerate(parts) for x in p)


def test_shard_rejects_bad_ranks():
    with pytest.raises(ValueError):
        plan.shard([1], 2, 2)


def test_plan_groups_claims_by_experiment_in_registry_order(kb):
    jobs, broken = plan.plan(kb)
    assert not broken
    names = [j.experiment for j in jobs]
    assert names == [n for n in catalogue.EXPERIMENTS if n in set(names)]
    att = next(j for j in jobs if j.experiment == "ssd-vs-attention")
    assert [t.claim for t in att.targets] == ["test-class/crossover", "test-class/ratio-16k"]
    assert sum(len(j.targets) for j in jobs) == len(ROWS)
    only, _ = plan.plan(kb, claim="test-class/int8")
    assert [(j.experiment, len(j.targets)) for j in only] == [("int8-native-vs-emulated", 1)]
    assert [i.name for i in plan.unlinked(kb)] == []


def test_plan_reports_unknown_experiments(tmp_path):
    root = write_kb(tmp_path)
    path = root / "records" / "classes" / "test-class.yaml"
    path.write_text(path.read_text().replace("experiment: int8-native-vs-emulated",
                                             "experiment: nope"))
    kb, _ = load_kb(root)
    jobs, broken = plan.plan(kb)
    assert "int8-native-vs-emulated" not in {j.experiment for j in jobs}
    assert [(b.claim, b.verdict) for b in broken] == [("test-class/int8", "error")]
    assert "nope" in broken[0].reason


def test_match_accelerator_uses_the_records_regexes(kb):
    assert machine.match_accelerator(kb, "NVIDIA H200") == "h200-sxm"
    assert machine.match_accelerator(kb, "Some Other GPU") is None
    assert machine.match_accelerator(kb, None) is None


def test_not_applicable_reasons(kb):
    jobs, _ = plan.plan(kb)
    target = jobs[0].targets[0]
    assert plan.not_applicable(kb, "h200-sxm", target) is None
    assert "affected_by_hardware" in plan.not_applicable(kb, "rtx-4090", target)
    assert "matched no accelerator" in plan.not_applicable(kb, None, target)
    int4 = target.row.model_copy(update={"quantity": "int4_tensor_ops"})
    reason = plan.not_applicable(kb, "h200-sxm", plan.Target(
        target.claim, target.record, int4, target.magnitude))
    assert reason.startswith("h200-sxm has no int4_tensor_ops")


def test_context_check_and_floor_and_time_limit(monkeypatch):
    import torch

    from flopkb.verify import context, timing

    ctx = context.Context(gpu=False)
    ctx.begin(10)
    ctx.check("ok", torch.ones(4), torch.ones(4))
    with pytest.raises(context.ExperimentError, match="disagrees"):
        ctx.check("bad", torch.ones(4), torch.zeros(4) + 2)
    with pytest.raises(context.ExperimentError, match="disagrees"):
        ctx.check("nan", torch.tensor([float("nan")]), torch.ones(1))
    with pytest.raises(context.ExperimentError):
        ctx.check("int", torch.tensor([1, 2]), torch.tensor([1, 3]), exact=True)
    assert [c["ok"] for c in ctx.checks] == [True, False, False, False]

    monkeypatch.setattr(timing, "time_cuda",
                        lambda fn, sets, **kw: timing.summarize([1.0, 1.0, 1.0, 1.0, 1.0]))
    ctx.ceilings = context.Ceilings(bf16_tflops=1.0, copy_gbps=1.0, origin="test")
    ctx.time("fine", None, [()], flops=0.5e9, nbytes=0.5e6)  # floor 0.5 ms < 1 ms
    with pytest.raises(context.ExperimentError, match="below the roofline floor"):
        ctx.time("impossible", None, [()], flops=2e9)  # floor 2 ms > 1 ms
    assert ctx.timings["impossible"]["floor_ms"] == pytest.approx(2.0)
    assert ctx.ceilings.floor_ms(2e9, 0, rate_scale=2.0) == pytest.approx(1.0)

    import time

    ctx.begin(100)
    ctx._deadline = time.monotonic() - 1  # soft limit passed, hard limit (1.5x) not yet
    assert ctx.more(0)  # the first point always runs
    assert not ctx.more(1) and "sweep cut" in ctx.notes[0]
    ctx._deadline -= 100
    with pytest.raises(context.TimeLimitError):
        ctx.tick()


def test_sweep_skips_a_failing_point_and_stops_at_the_time_limit():
    import time

    from flopkb.verify import context

    ctx = context.Context(gpu=False)
    ctx.begin(100)
    rows: list[int] = []
    for point, guarded in ctx.sweep([1, 2, 3, 4], rows):
        with guarded:
            if point == 2:
                raise RuntimeError("out of memory")
            rows.append(point)
            if point == 3:
                ctx._deadline = time.monotonic() - 1  # the soft limit passes after point 3
    # point 2's failure is noted and does not count; the cut comes before point 4
    assert rows == [1, 3]
    assert ctx.notes == ["sweep point 2 skipped: RuntimeError: out of memory",
                         "sweep cut after 2 points at the 100 s time limit"]
    # the claim's own point (the first) is never optional: its failure ends the sweep
    with pytest.raises(RuntimeError, match="first"):
        for _point, guarded in ctx.sweep([1], []):
            with guarded:
                raise RuntimeError("first")


def test_rotations_defeat_l2():
    from flopkb.verify.context import Context

    ctx = Context(gpu=False, l2_bytes=50 * 2**20)
    assert ctx.rotations(1 * 2**30) == 1
    assert ctx.rotations(10 * 2**20) == 10
    assert ctx.rotations(1) == 32


def test_resolve_conditions_notes_what_cannot_be_honoured():
    from flopkb.evidence.measurement import resolve, size_of

    cond, notes = resolve({"state_dim": 64, "seq_len": 4096},
                          {"state_dim": 128, "pass": "backward", "hardware": "A100", "foo": 1})
    assert cond["state_dim"] == 128 and cond["source_hardware"] == "A100"
    assert any("backward" in n for n in notes) and any("foo" in n for n in notes)
    assert size_of("16K") == 16384 and size_of(2048) == 2048


def test_judge_reads_magnitudes():
    from flopkb.evidence.measurement import judge_ratio
    from flopkb.evidence.stats import Interval
    from flopkb.grammar.magnitude import parse_magnitude

    m = Interval(4.0, 3.8, 4.2)
    assert judge_ratio(m, parse_magnitude("2-8x"), what="", qualitative="").verdict == "confirmed"
    assert judge_ratio(m, parse_magnitude("qualitative"), what="",
                       qualitative="q").verdict == "confirmed"
    assert judge_ratio(m, parse_magnitude("10x"), what="", qualitative="").verdict == "refuted"
    assert judge_ratio(m, parse_magnitude("crossover at 2K"), what="",
                       qualitative="").verdict == "error"
