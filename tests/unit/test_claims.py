"""`list_claims`: the JSON shape docs/kb.md gives, filters, the latest verdict per part."""

from __future__ import annotations

import datetime as dt

import pytest

from flopkb.claims import list_claims
from flopkb.hardware.model import UnknownRecord
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.model import EvidenceRecord
from flopkb.paths import bundled_root
from tests.unit.verify_fixtures import stored_ratio


@pytest.fixture
def kb() -> KnowledgeBase:
    loaded, _ = load_kb(bundled_root())
    return loaded


def _evidence(eid: str, claim: str, acc: str | None, verdict: str, hour: int) -> EvidenceRecord:
    return EvidenceRecord.model_validate(
        {
            "schema_version": 2,
            "id": eid,
            "kind": "evidence",
            "title": eid,
            "history": [{"date": "2026-11-30", "by": "test", "note": "synthetic"}],
            "claim": claim,
            "experiment": "ssd-vs-scan",
            "accelerator": acc,
            "implementation": "bundled",
            "kernel_hashes": {},
            "machine": {},
            "verdict": verdict,
            "command": "flopkb verify",
            "timestamp": dt.datetime(2026, 11, 30, hour, tzinfo=dt.timezone.utc),
            # the measurement the verdict re-derives from (the claim says 2-8x)
            **stored_ratio(verdict, "2-8x"),
        }
    )


def test_rows_have_the_design_keys(kb: KnowledgeBase) -> None:
    rows = list_claims(kb)
    assert len(rows) == sum(1 for _ in kb.claims())
    by_id = {f"{rec.id}/{row.id}": row for _, rec, row in kb.claims()}
    for row in rows:
        assert set(row) == {"claim", "record", "quantity", "magnitude", "basis", "verdicts",
                            "verdict_text", "pooled_text", "why_no_figure", "runs",
                            "implementation_sensitive",
                            "computed", "computed_from_architectures", "not_verifiable",
                            "not_applicable_on"}
        assert row["claim"].startswith(row["record"] + "/")
        source = by_id[row["claim"]]
        assert (row["computed"] is not None) == (source.formula is not None
                                                 and row["basis"] == "derived")
        assert (row["computed_from_architectures"] is not None) == (
            source.derived_from is not None)


def test_derived_rows_carry_their_computed_values(kb: KnowledgeBase) -> None:
    rows = {r["claim"]: r for r in list_claims(kb, basis="derived")}
    # int8_to_bf16_ratio on every part the class lists; a qualitative magnitude is not compared
    int8 = rows["int8-gemm/int8-native-beats-emulated"]["computed"]
    assert int8 and all(c["agrees"] is None for c in int8.values())
    hopper = {acc: c for acc, c in int8.items() if acc in {"h100-sxm", "h200-sxm"}}
    assert {round(c["value"], 3) for c in hopper.values()} == {2.0}
    replaced = rows["nemotron-h/attention-layers-replaced"]["computed_from_architectures"]
    # 48 of 52 layers (8B) and 108 of 118 (56B) are not attention
    assert [round(c["value"], 1) for c in replaced] == [92.3, 91.5]
    narrowed = list_claims(kb, basis="derived", accelerator="h200-sxm")
    assert all(set(r["computed"]) == {"h200-sxm"} for r in narrowed if r["computed"])


def test_filters(kb: KnowledgeBase) -> None:
    assert {r["record"] for r in list_claims(kb, record="mamba2-ssd")} == {"mamba2-ssd"}
    assert {r["basis"] for r in list_claims(kb, basis="derived")} == {"derived"}
    assert {r["quantity"] for r in list_claims(kb, quantity="memory_capacity")} == {
        "memory_capacity"
    }
    assert list_claims(kb, accelerator="rtx-3090")


def test_unknown_filter_ids_are_errors_not_empty_results(kb: KnowledgeBase) -> None:
    with pytest.raises(UnknownRecord):
        list_claims(kb, record="mamba3")
    with pytest.raises(UnknownRecord):
        list_claims(kb, accelerator="b200")


def test_verdicts_are_pooled_per_accelerator(kb: KnowledgeBase) -> None:
    claim = "mamba2-ssd/ssd-vs-fused-scan"
    # start from a KB without the bundled evidence, so only the records below decide the verdicts
    for rid in list(kb.evidence):
        del kb.records[rid]
    for ev in (
        _evidence("ev-old", claim, "h100-sxm", "confirmed", 1),
        _evidence("ev-new", claim, "h100-sxm", "confirmed", 2),
        _evidence("ev-a100", claim, "a100-pcie-80gb", "inconclusive", 1),
        _evidence("ev-h200-1", claim, "h200-sxm", "refuted", 1),
        _evidence("ev-h200-2", claim, "h200-sxm", "confirmed", 2),
    ):
        kb.records[ev.id] = ev
    row = next(r for r in list_claims(kb) if r["claim"] == claim)
    # the later confirmation on h200-sxm does not silently replace the refutation before it
    assert row["verdicts"] == {"a100-pcie-80gb": "inconclusive", "h100-sxm": "confirmed",
                               "h200-sxm": "disagreeing"}
    assert (row["runs"]["h100-sxm"]["runs"], row["runs"]["h100-sxm"]["agreeing"]) == (2, 2)
    assert [r["evidence"] for r in row["runs"]["h200-sxm"]["per_run"]] == ["ev-h200-2",
                                                                          "ev-h200-1"]
    narrowed = next(r for r in list_claims(kb, accelerator="h100-sxm") if r["claim"] == claim)
    assert narrowed["verdicts"] == {"h100-sxm": "confirmed"}


def test_a_verdict_without_a_figure_says_why(kb: KnowledgeBase) -> None:
    # the bundled Kimi throughput row: every H200 run refused its composed ratio as implausible
    rows = {r["claim"]: r for r in list_claims(kb)}
    row = rows["kimi-linear/decoding-throughput"]
    assert row["verdicts"] == {"h200-sxm": "error"}
    why = row["why_no_figure"]["h200-sxm"]
    assert why.startswith("newest run: implausible: the composed memory_limited ratio")
    assert "; " not in why  # the first clause only, the notes after it left out
    # a row with a figure carries none
    assert rows["nemotron-h/faster-inference"]["why_no_figure"] == {}


def test_why_no_figure_is_bounded_on_a_hostile_reason() -> None:
    # a record's reason is untrusted text: a megabyte without "; " is cut to WHY_CHARS, at
    # linear cost (the terminal table escapes what is left, tests/cli/test_output_escaping.py)
    import time
    from types import SimpleNamespace

    from flopkb.claims import WHY_CHARS, why_no_figure

    run = SimpleNamespace(reason="\x1b[31m" + "x" * 1_000_000)
    p = SimpleNamespace(figure=None, verdict="error", runs=[run])
    start = time.process_time()
    why = why_no_figure(p)
    assert time.process_time() - start < 1.0
    assert why is not None and len(why) == len("newest run: ") + WHY_CHARS and why.endswith("…")
    # a verdict with a figure, or one that measured something, says nothing here
    assert why_no_figure(SimpleNamespace(figure=object(), verdict="error", runs=[run])) is None
    assert why_no_figure(SimpleNamespace(figure=None, verdict="refuted", runs=[run])) is None
