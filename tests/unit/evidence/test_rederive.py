"""Evidence verdicts re-derive from the numbers the record stores (flopkb.evidence.rederive)."""

from __future__ import annotations

import pytest

from flopkb.evidence.rederive import (
    INCONSISTENT,
    LEGACY,
    MISMATCH,
    MISSING,
    consistency,
    rederive,
)
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.model import EvidenceRecord
from flopkb.paths import bundled_root

B5 = "ev-mamba2-ssd--kernel-vs-pytorch-h200-sxm-20261201t154805z"
A3 = "ev-mamba2-ssd--ssd-vs-attention-16k-h200-sxm-20261201t154226z"


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def _edited(kb: KnowledgeBase, eid: str, **changes) -> EvidenceRecord:
    data = kb.evidence[eid].model_dump(mode="json")
    data.update(changes)
    return EvidenceRecord.model_validate(data)


def test_every_bundled_verdict_re_derives(kb):
    assert {eid: rederive(kb, ev) for eid, ev in kb.evidence.items() if rederive(kb, ev)} == {}
    assert kb.untrusted_evidence() == {}


def test_an_edited_verdict_is_a_mismatch(kb):
    # A3's 16K ratio is refuted; the same numbers with `confirmed` written over the verdict
    ev = _edited(kb, A3, verdict="confirmed")
    kinds = {p.kind for p in rederive(kb, ev)}
    assert MISMATCH in kinds and INCONSISTENT in kinds


def test_an_edited_measurement_is_a_mismatch(kb):
    ev = kb.evidence[B5]
    data = ev.model_dump(mode="json")
    # a lower p10 corner at the reading point (T=2048), still above the qualitative threshold:
    # same verdict, other interval
    row = next(r for r in data["sweep"] if r["seq_len"] == 2048)
    row["ratio_low"] = 2.0
    problems = rederive(kb, EvidenceRecord.model_validate(data))
    assert [(p.kind, p.path) for p in problems] == [(MISMATCH, ("measured",))]


def test_copied_hashes_without_statistics_cannot_re_derive(kb):
    ev = _edited(kb, A3, verdict="confirmed", statistics={}, sweep=[], judgements=[],
                 implementation_sensitive=False)
    assert [p.kind for p in rederive(kb, ev)] == [MISSING]


def test_schema_3_numbers_the_experiment_cannot_read_are_legacy_not_trusted(kb):
    ev = _edited(kb, B5, statistics={"data": {"primary": {"ratio": "fast"}}},
                 sweep=[{"seq_len": 2048, "ratio": "fast"}])
    assert [p.kind for p in rederive(kb, ev)] == [LEGACY]


def test_schema_4_without_rounds_cannot_re_derive(kb):
    ev = _edited(kb, B5, schema_version=4)
    assert {p.kind for p in rederive(kb, ev)} == {MISSING}


def test_rounds_re_derive_and_must_match_the_merged_sweep(kb):
    ev = kb.evidence[B5]
    row = ev.statistics["data"]["primary"]
    slow = {**row, "ratio": 10.0, "ratio_low": 9.0, "ratio_high": 11.0}
    fast = {**row, "ratio": 20.0, "ratio_low": 19.0, "ratio_high": 22.0}
    rounds = [{"data": {"primary": r}, "sweep": [r]} for r in (row, slow, fast)]
    # the merged interval covers every round: [min p10, max p90], the median value
    merged = {**row, "ratio": row["ratio"], "ratio_low": 9.0, "ratio_high": 22.0}
    measured = {**ev.measured.model_dump(), "value": row["ratio"], "low": 9.0, "high": 22.0}
    good = _edited(kb, B5, schema_version=4, rounds=rounds, judgements=[],
                   statistics={"data": {"primary": merged}}, sweep=[merged], measured=measured)
    assert rederive(kb, good) == []
    bad = _edited(kb, B5, schema_version=4, rounds=rounds, judgements=[],
                  statistics={"data": {"primary": merged}}, sweep=[row], measured=measured)
    assert [p.path for p in rederive(kb, bad)] == [("sweep",)]


def test_the_implementation_sensitive_flag_follows_the_judgements(kb):
    ev = _edited(kb, B5, implementation_sensitive=True)
    assert [p.path for p in consistency(ev)] == [("implementation_sensitive",)]


def test_a_calibration_re_derives_from_its_ceilings(kb):
    cal = next(ev for ev in kb.evidence.values() if ev.claim is None and ev.schema_version == 3)
    assert rederive(kb, cal) == []
    broken = _edited(kb, cal.id, ceilings={**cal.ceilings, "bf16_tflops": 5000.0})
    assert [p.kind for p in rederive(kb, broken)] == [MISMATCH]


def test_the_catalogue_is_read_once_per_kb_not_per_evidence_record(monkeypatch):
    """Each `catalogue.for_kb` call re-stats the KB's declarations and kernel files (its cache
    key): re-derivation, staleness and pooling of every evidence record ask for the catalogue,
    so they must share one read, or validate grows by a file scan per record (it did: 669 scans
    for 131 records)."""
    from flopkb.evidence import catalogue, pooled
    from flopkb.evidence.hashing import stale_evidence

    fresh, _ = load_kb(bundled_root())
    calls = []
    real = catalogue.for_kb
    monkeypatch.setattr(catalogue, "for_kb", lambda root: calls.append(root) or real(root))
    assert len(fresh.evidence) > 100
    assert fresh.untrusted_evidence() == {}
    stale_evidence(fresh)
    pooled.pooled(fresh)
    assert calls == [fresh.root]
