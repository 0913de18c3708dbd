"""The experiments of the four kernel-level claims (scan-benchmark, non-matmul-cost, prefill-trend)
judged on fake measurements on the CPU, their verdicts re-derived from stored rounds, and the
claim links that excuse a row (`not_applicable`) or narrow it to parts (`judged_on`)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flopkb.claims import list_claims
from flopkb.evidence import catalogue, hooks
from flopkb.evidence.measurement import Measurement
from flopkb.evidence.rederive import MISMATCH, rederive
from flopkb.grammar.magnitude import parse_magnitude
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.model import EvidenceRecord
from flopkb.model.classes import VerifyLink
from flopkb.paths import bundled_root
from flopkb.verify import plan
from flopkb.verify.context import ExperimentError
from flopkb.verify.experiments import non_matmul_cost, prefill_trend, scan_benchmark

TEMPLATE = "ev-mamba2-ssd--kernel-vs-pytorch-h200-sxm-20261201t154805z"
LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def _band(value: float, spread: float) -> dict[str, float]:
    return {"value": value, "low": value * (1 - spread), "high": value * (1 + spread)}


def _scan_rows(cross_at: float, speedups: list[float], spread: float = 0.02) -> list[dict]:
    """Sweep rows whose t(attention) / t(scan) is L / cross_at and whose t(pytorch) / t(scan)
    is `speedups` (one per length)."""
    rows = []
    for steps, speedup in zip(LENGTHS, speedups, strict=True):
        a, p = _band(steps / cross_at, spread), _band(speedup, spread)
        rows.append({"seq_len": steps, "scan_ms": 1.0, "attention_ms": a["value"],
                     "ratio": a["value"], "ratio_low": a["low"], "ratio_high": a["high"],
                     "pytorch_ms": speedup, "pytorch_ratio": p["value"],
                     "pytorch_ratio_low": p["low"], "pytorch_ratio_high": p["high"]})
    return rows


def _scan_m(rows: list[dict]) -> Measurement:
    return Measurement(scan_benchmark.summary(rows), rows, dict(scan_benchmark.DEFAULTS))


@pytest.mark.parametrize(("cross_at", "verdict"), [(2048, "confirmed"), (8192, "refuted"),
                                                    (3000, "inconclusive")])
def test_the_crossover_is_read_against_2k(cross_at, verdict):
    spread = 0.3 if verdict == "inconclusive" else 0.02
    m = _scan_m(_scan_rows(cross_at, [10.0] * 6, spread))
    j = scan_benchmark.judge(m, parse_magnitude("crossover at 2K"), {})
    assert j.verdict == verdict
    assert j.unit == "tokens"


@pytest.mark.parametrize(("speedups", "verdict"), [
    ([3, 8, 15, 30, 28, 25], "confirmed"),   # the largest, 30x, inside [20, 40]
    ([2, 3, 4, 5, 5, 4], "refuted"),         # never near 20x
    ([2, 3, 4, 5, 6, 80], "refuted"),        # far above 40x
])
def test_up_to_20_40x_reads_the_largest_speedup(speedups, verdict):
    m = _scan_m(_scan_rows(2048, [float(s) for s in speedups]))
    j = scan_benchmark.judge(m, parse_magnitude("up to 20-40x"), {})
    assert j.verdict == verdict
    assert j.measured.value == max(speedups)


def test_up_to_reads_among_the_lengths_every_round_timed():
    # the baseline reached the longest length in one round only (out of memory in the others):
    # the merged row has an open interval and its larger ratio must not judge the claim alone
    rows = _scan_rows(2048, [3.0, 5.0, 8.0, 9.0, 9.6, 9.8])
    rows[-1].update(pytorch_ratio_low=None, pytorch_ratio_high=None)
    j = scan_benchmark.judge(_scan_m(rows), parse_magnitude("up to 18-44x"), {})
    assert j.measured.value == 9.6
    assert j.measured.low is not None and j.verdict == "refuted"
    assert "L=8192" in j.what


def test_a_speedup_band_straddling_20x_is_inconclusive():
    rows = _scan_rows(2048, [3.0, 5.0, 10.0, 18.0, 18.0, 18.0], spread=0.2)
    j = scan_benchmark.judge(_scan_m(rows), parse_magnitude("up to 20-40x"), {})
    assert j.verdict == "inconclusive"


def test_lengths_where_the_baseline_ran_out_of_memory_are_left_out_of_the_speedup():
    rows = _scan_rows(2048, [3.0, 8.0, 25.0, 30.0, 1.0, 1.0])
    for r in rows[4:]:
        for key in ("pytorch_ms", "pytorch_ratio", "pytorch_ratio_low", "pytorch_ratio_high"):
            del r[key]
    j = scan_benchmark.judge(_scan_m(rows), parse_magnitude("up to 20-40x"), {})
    assert (j.verdict, j.measured.value) == ("confirmed", 30.0)
    for r in rows:
        r.pop("pytorch_ratio", None)
    with pytest.raises(ExperimentError, match="timed at no length"):
        scan_benchmark.judge(_scan_m(rows), parse_magnitude("up to 20-40x"), {})


def test_a_qualitative_magnitude_has_no_reading_in_the_scan_benchmark():
    j = scan_benchmark.judge(_scan_m(_scan_rows(2048, [5.0] * 6)),
                             parse_magnitude("qualitative"), {})
    assert j.verdict == "error" and "no reading" in j.reason


def test_the_paper_lengths_are_2_9_to_2_19():
    assert scan_benchmark.lengths(scan_benchmark.DEFAULTS, quick=False) == [
        2**k for k in range(9, 20)]
    assert scan_benchmark.lengths(scan_benchmark.DEFAULTS, quick=True) == list(
        scan_benchmark.QUICK)
    with pytest.raises(ExperimentError):
        scan_benchmark.lengths({"min_len": 1024, "max_len": 2**30}, quick=False)


def _nm(value: float, spread: float, sheet: float | None = 14.8) -> Measurement:
    return Measurement({"ratio_fma": _band(value, spread), "ratio_exp": _band(value * 3, spread),
                        "datasheet": {"accelerator": "h200-sxm", "tensor_to_simt_ratio": sheet}})


@pytest.mark.parametrize(("value", "spread", "verdict"), [
    (16.0, 0.02, "confirmed"), (8.0, 0.02, "refuted"), (16.0, 0.4, "inconclusive")])
def test_the_non_matmul_ratio_is_read_against_16x(value, spread, verdict):
    declaration = catalogue.get("non-matmul-cost").declaration
    j = non_matmul_cost.judge(_nm(value, spread), parse_magnitude("16x"), {},
                              declaration=declaration)
    assert j.verdict == verdict
    assert "datasheet ratio 14.8" in j.what


def _trend(values: list[float], spread: float = 0.02) -> Measurement:
    rows = []
    for steps, v in zip(prefill_trend.LENGTHS, values, strict=False):
        rows.append({"seq_len": steps, "misprediction": v, "misprediction_low": v * (1 - spread),
                     "misprediction_high": v * (1 + spread)})
    return Measurement({"lengths": [r["seq_len"] for r in rows]}, rows)


@pytest.mark.parametrize(("values", "spread", "verdict"), [
    ([3.0, 3.5, 4.0, 5.0, 6.0], 0.02, "confirmed"),      # rises throughout
    ([5.0, 5.0, 5.0, 5.0, 5.0], 0.01, "refuted"),        # flat
    ([6.0, 5.0, 4.0, 3.5, 3.0], 0.02, "refuted"),        # falls
    ([3.0, 6.0, 3.5, 6.0, 6.5], 0.02, "inconclusive"),   # rises with a fall on the way
    ([5.0, 5.1, 5.2, 5.3, 5.4], 0.2, "inconclusive"),    # bands overlap
])
def test_worst_at_long_prefill_is_a_monotone_trend(values, spread, verdict):
    j = prefill_trend.judge(_trend(values, spread), parse_magnitude("qualitative"), {})
    assert j.verdict == verdict
    assert j.measured.value == pytest.approx(values[-1] / values[0])


def test_a_trend_needs_three_lengths():
    with pytest.raises(ExperimentError, match="at least 3"):
        prefill_trend.judge(_trend([3.0, 6.0]), parse_magnitude("qualitative"), {})


def stored_evidence(kb: KnowledgeBase, claim: str, experiment: str, m: Measurement,
                    conditions: dict | None = None) -> dict:
    """An evidence record of `claim` storing `m` as its one round, with the verdict its
    experiment's judge gives, called as verify calls it (with its declaration): what `verify
    --gpu` would write."""
    found = kb.claim(claim)
    conditions = {} if conditions is None else conditions
    mod = hooks.experiment_module(catalogue.get(experiment), None, kb_code=False)
    j = mod.judge(m, parse_magnitude(found[1].magnitude), conditions)
    data = kb.evidence[TEMPLATE].model_dump(mode="json")
    measured = {**data["measured"], "value": j.measured.value, "low": j.measured.low,
                "high": j.measured.high, "unit": j.unit}
    data.update(claim=claim, experiment=experiment, schema_version=4, verdict=j.verdict,
                judge_revision=catalogue.get(experiment).judge_revision, judgements=[],
                implementation_sensitive=False, measured=measured,
                rounds=[{"data": m.data, "sweep": m.sweep}],
                statistics={"data": m.data}, sweep=m.sweep, conditions=conditions)
    return data


@pytest.mark.parametrize(("claim", "experiment", "m"), [
    ("selective-ssm-scan/fused-scan-vs-flash-attention", "scan-benchmark",
     _scan_m(_scan_rows(2048, [3, 8, 15, 30, 28, 25]))),
    ("selective-ssm-scan/fused-scan-vs-pytorch", "scan-benchmark",
     _scan_m(_scan_rows(2048, [3, 8, 15, 30, 28, 25]))),
    ("flash-attention-2/non-matmul-flop-cost", "non-matmul-cost", _nm(16.0, 0.02)),
    ("selective-ssm-scan/worst-at-long-prefill", "prefill-trend",
     _trend([3.0, 3.5, 4.0, 5.0, 6.0])),
])
def test_the_verdicts_re_derive_from_their_stored_rounds(kb, claim, experiment, m):
    data = stored_evidence(kb, claim, experiment, m)
    assert rederive(kb, EvidenceRecord.model_validate(data)) == []
    data["verdict"] = "refuted" if data["verdict"] != "refuted" else "confirmed"
    kinds = {p.kind for p in rederive(kb, EvidenceRecord.model_validate(data))}
    assert MISMATCH in kinds


def test_a_link_names_exactly_one_of_experiment_and_not_applicable():
    assert VerifyLink(not_applicable="needs two GPU models").runs is False
    assert VerifyLink(experiment="scan-benchmark").runs is True
    for bad in ({}, {"experiment": "a", "not_applicable": "b"},
                {"not_applicable": "b", "subject": "scan"},
                {"not_applicable": "b", "judged_on": ["a100-sxm4-80gb"]},
                {"not_applicable": "x" * 401}):
        with pytest.raises(ValidationError):
            VerifyLink(**bad)


def test_claims_say_why_a_row_is_not_judged(kb):
    rows = {r["claim"]: r for r in list_claims(kb)}
    multinode = rows["gpu-reduction/run-to-run-insufficient-multinode"]["not_verifiable"]
    assert multinode.startswith("not applicable: multi-node")
    fa2 = rows["flash-attention-2/non-matmul-flop-cost"]["not_verifiable"]
    assert fa2 == "judged on a100-sxm4-80gb, a100-pcie-80gb only"
    assert rows["selective-ssm-scan/fused-scan-vs-pytorch"]["not_verifiable"] is None


def test_a_part_specific_link_is_not_applicable_on_another_part(kb):
    jobs, _ = plan.plan(kb, claim="flash-attention-2/non-matmul-flop-cost")
    target = jobs[0].targets[0]
    why = plan.not_applicable(kb, "h200-sxm", target)
    assert why is not None and "a100-sxm4-80gb" in why and "h200-sxm" in why
    assert plan.not_applicable(kb, "a100-sxm4-80gb", target) is None


def test_the_four_rows_link_experiments_that_type_check(kb):
    jobs, broken = plan.plan(kb, record="selective-ssm-scan")
    assert broken == []
    linked = {t.claim: j.experiment for j in jobs for t in j.targets}
    assert linked["selective-ssm-scan/fused-scan-vs-flash-attention"] == "scan-benchmark"
    assert linked["selective-ssm-scan/fused-scan-vs-pytorch"] == "scan-benchmark"
    assert linked["selective-ssm-scan/worst-at-long-prefill"] == "prefill-trend"


def test_a_misspelt_judged_on_part_is_an_error(tmp_path):
    import yaml

    from tests.unit.verify_fixtures import write_kb

    root = write_kb(tmp_path)
    path = root / "records" / "classes" / "test-class.yaml"
    data = yaml.safe_load(path.read_text())
    data["flop"]["hardware_parameters"][0]["verify"]["judged_on"] = ["h200-sxm", "a100-sxm"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    from flopkb.check import run_checks

    kb, findings = load_kb(root)
    found = [f for f in [*findings, *run_checks(kb)] if f.rule == "FKB529"]
    assert [f.message.split(": ", 1)[1] for f in found] == [
        "judged_on names 'a100-sxm', which is no accelerator record"]
