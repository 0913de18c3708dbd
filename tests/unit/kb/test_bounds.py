"""The resource budget and isolation under hostile record content (issue 12)."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
import yaml

from flopkb import budget
from flopkb.grammar.formula import FormulaError, parse_formula
from flopkb.grammar.magnitude import MagnitudeError, parse_magnitude
from flopkb.grammar.text import closest_span
from flopkb.kb import load_kb
from flopkb.load import Limits, read_document
from flopkb.validate import capped, validate
from tests.unit.verify_fixtures import stored_ratio

SMALL_KB = Path(__file__).resolve().parents[2] / "cases" / "valid" / "small-kb"
CLASS = "records/classes/mamba2-ssd.yaml"


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(SMALL_KB, tmp_path / "kb")
    return tmp_path / "kb"


def test_closest_span_compares_a_bounded_number_of_windows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """difflib runs on at most 3 x HINT_MAX_CANDIDATES windows, however long the prose."""
    calls = 0
    ratio = difflib.SequenceMatcher.ratio

    def counted(self: difflib.SequenceMatcher) -> float:
        nonlocal calls
        calls += 1
        return ratio(self)

    monkeypatch.setattr(difflib.SequenceMatcher, "ratio", counted)
    prose = " ".join(f"w{i % 50} x{i % 7}" for i in range(20_000))
    effect = " ".join(f"w{i % 50} x{i % 5}" for i in range(40))
    assert closest_span(prose + " 2-8x faster than the scan", effect) is not None
    assert 0 < calls <= 3 * budget.HINT_MAX_CANDIDATES


def test_closest_span_gives_no_hint_for_an_effect_over_the_budget() -> None:
    effect = "x" * (budget.HINT_MAX_EFFECT_CHARS + 1)
    assert closest_span("some prose " * 1000, effect) is None


def test_a_record_that_crashes_a_check_hides_no_other_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FKB199 is per record: the other class record's FKB201 is still reported."""
    kb = _copy(tmp_path)
    path = kb / CLASS
    path.write_text(path.read_text().replace("fused associative scan\"", "fused scan\""))
    twin = kb / "records/classes/twin.yaml"
    twin.write_text(path.read_text().replace("id: mamba2-ssd", "id: twin"))

    def crash_on_twin(prose: str, effect: str, words: list[str] | None = None) -> str:
        if "twin" in crashed:
            return "fine"
        crashed.add("twin")
        raise ValueError("a bug some record content trips")

    crashed: set[str] = set()
    monkeypatch.setattr("flopkb.check.provenance.closest_span", crash_on_twin)
    result = validate(kb)
    internal = [f for f in result.findings if f.rule == "FKB199"]
    assert len(internal) == 1 and internal[0].record in {"mamba2-ssd", "twin"}
    assert internal[0].file.endswith(f"{internal[0].record}.yaml")
    other = {"mamba2-ssd", "twin"} - {internal[0].record}
    assert [f.record for f in result.findings if f.rule == "FKB201"] == sorted(other)


def test_a_crash_while_loading_one_file_is_that_files_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flopkb.kb as kb_module

    real = kb_module.to_record

    def crash_on_quantity(doc, stem, limits=None):
        if stem == "hbm_bandwidth":
            raise RecursionError("deep")
        return real(doc, stem, limits)

    monkeypatch.setattr(kb_module, "to_record", crash_on_quantity)
    result = validate(_copy(tmp_path))
    internal = [f for f in result.findings if f.rule == "FKB199"]
    assert [Path(f.file).name for f in internal] == ["hbm_bandwidth.yaml"]
    # the others loaded and were checked: the derived row now misses its input
    assert result.records == 7


def test_deep_nesting_under_a_raised_limit_is_a_finding_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep.yaml"
    # libyaml stops at 1000 levels; 950 of them nest deeper than Python's recursion allows here
    path.write_text("a:\n  " + "- " * 950 + "x\n")
    doc = read_document(path, "deep.yaml", Limits(max_depth=1_000_000))
    assert [f.rule for f in doc.findings] == ["FKB109"]


def test_many_keys_and_long_numbers_are_refused_before_building_values(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("a: " + "1" * 33 + "\nb: -1.5e10\nc: '" + "1" * 5000 + "'\n")
    assert [f.rule for f in read_document(path, "x.yaml").findings] == ["FKB114"]
    path.write_text("".join(f"k{i}: 1\n" for i in range(budget.MAX_KEYS + 1)))
    assert [f.rule for f in read_document(path, "x.yaml").findings] == ["FKB115"]
    path.write_text("".join(f"k{i}: 1\n" for i in range(budget.MAX_KEYS)))
    assert read_document(path, "x.yaml").findings == []


@pytest.mark.parametrize(
    "formula",
    [
        "\uff42f16_tensor_flops / hbm_bandwidth",  # fullwidth b: NFKC would fold it to ASCII
        "bf16_tensor_flops\u00a0/ hbm_bandwidth",
        "hbm_bandwidth * 0x10",
        "hbm_bandwidth * 0o17",
        "hbm_bandwidth * 1_000",
        "hbm_bandwidth  # bytes per second",
        "hbm_bandwidth * 1.2.3",
        "hbm_bandwidth * 1" + "0" * 40,
        "hbm_bandwidth * 1j",
    ],
)
def test_formula_whitelist_takes_only_ascii_ids_and_plain_decimals(formula: str) -> None:
    with pytest.raises(FormulaError):
        parse_formula(formula)


@pytest.mark.parametrize("formula", ["a / b", "(1 + 7) / 1", "x * 1e12", "2 ** -1", " a+0.5 "])
def test_formula_whitelist_keeps_plain_formulas(formula: str) -> None:
    assert parse_formula(formula).text == formula


def test_magnitude_numbers_are_bounded() -> None:
    with pytest.raises(MagnitudeError):
        parse_magnitude("crossover at " + "9" * 40 + "K")
    with pytest.raises(MagnitudeError):
        parse_magnitude("2-8x" + " " * budget.MAX_MAGNITUDE_CHARS)
    assert parse_magnitude("crossover at 2K").low == 2048


@pytest.mark.parametrize("version", ["true", "'2'"])
def test_schema_version_is_a_strict_integer(tmp_path: Path, version: str) -> None:
    kb = _copy(tmp_path)
    path = kb / CLASS
    path.write_text(path.read_text().replace("schema_version: 2", f"schema_version: {version}"))
    result = validate(kb)
    assert [(f.rule, f.line) for f in result.errors] == [("FKB121", 1)]


def test_the_findings_cap_keeps_errors_before_warnings() -> None:
    from flopkb.findings import Finding, Severity

    warnings = [Finding("FKB601", Severity.warning, "f", i, 1, "r", "w") for i in range(1, 150)]
    error = Finding("FKB121", Severity.error, "f", 200, 1, "r", "e")
    out = capped([*warnings, error], limit=10)
    assert error in out and len(out) == 11
    assert "140 more" in next(f.message for f in out if f.rule == "FKB116")


def _evidence(path: Path, eid: str, verdict: str, when: str) -> None:
    path.write_text(
        f"schema_version: 2\nid: {eid}\nkind: evidence\ntitle: {eid}\n"
        "claim: mamba2-ssd/ssd-vs-fused-scan\nexperiment: ssd-vs-scan\naccelerator: h100-sxm\n"
        "implementation: bundled\nkernel_hashes: {ssd/chunked.py: aaaa}\nmachine: {gpu: x}\n"
        f"verdict: {verdict}\ncommand: flopkb verify --gpu\n"
        f"timestamp: {when}\nhistory: [{{date: 2026-11-30, by: test, note: evidence}}]\n"
        # the measurement its verdict re-derives from (the claim says 2-8x)
        + yaml.safe_dump(stored_ratio(verdict, "2-8x"))
    )


def test_forged_future_evidence_never_gives_the_latest_verdict(tmp_path: Path) -> None:
    from flopkb.claims import list_claims
    from flopkb.evidence.pooled import latest_verdicts as kb_latest
    from flopkb.graph.queries import KBGraph, latest_verdicts

    kb_root = _copy(tmp_path)
    folder = kb_root / "records/evidence"
    folder.mkdir()
    _evidence(folder / "ev-real.yaml", "ev-real", "confirmed", "2026-11-01T10:00:00Z")
    _evidence(folder / "ev-forged.yaml", "ev-forged", "refuted", "2999-01-01T00:00:00Z")
    _evidence(folder / "ev-early.yaml", "ev-early", "refuted", "2019-01-01T00:00:00Z")
    kb, _ = load_kb(kb_root)
    claim = "mamba2-ssd/ssd-vs-fused-scan"
    assert kb_latest(kb)[claim] == {"h100-sxm": "confirmed"}
    row = next(r for r in list_claims(kb) if r["claim"] == claim)
    assert row["verdicts"] == {"h100-sxm": "confirmed"}
    graph = latest_verdicts(KBGraph.from_kb(kb), "claim:" + claim)
    assert {acc: v["verdict"] for acc, v in graph.items()} == {"h100-sxm": "confirmed"}
    rules = sorted(f.rule for f in validate(kb_root).errors)
    assert rules == ["FKB508", "FKB509"]


def test_a_huge_id_is_shown_cut_and_given_whole_once_in_json(tmp_path: Path) -> None:
    """Issue 18: a 1M-character id was the `[record]` of each of its findings, in every format."""
    import json

    from flopkb.report import FORMATTERS

    kb = _copy(tmp_path)
    huge = "a" * 1_000_000
    source = (kb / "records/sources/dao-gu-2024-ssd.yaml").read_text()
    (kb / "records/sources/long-id.yaml").write_text(source.replace("dao-gu-2024-ssd", huge, 1))
    result = validate(kb)
    mine = [f for f in result.findings if f.full_record]
    assert mine and all(f.full_record == huge for f in mine)
    assert all(f.record == "a" * budget.ECHO_KEEP_CHARS + "…(1000000 chars)" for f in mine)
    assert all(len(f.message) <= budget.MESSAGE_MAX_CHARS for f in result.findings)
    for fmt in ("text", "github", "sarif"):
        assert huge[:1000] not in FORMATTERS[fmt](result), fmt
    text = FORMATTERS["json"](result)
    assert text.count(huge) == 1 and len(text) < len(huge) + 100_000
    assert json.loads(text)["full_records"] == {mine[0].record: huge}


def test_a_valid_id_is_never_cut() -> None:
    from flopkb.findings import Finding, Severity

    rid = "x" * 120
    f = Finding("FKB201", Severity.error, "f.yaml", 1, 1, rid, f"effect of {rid} is long")
    assert f.record == rid and f.full_record is None and rid in f.message
